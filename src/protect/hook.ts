import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { sendError, type ErrorCode } from '../errors.ts'
import { aalRank, type AuthUser } from './claims.ts'
import { acceptedAudiences, canForbid, normaliseAuth, type AuthOption, type RouteAuth } from './requirement.ts'
import { SessionCheckUnavailableError, type SessionChecker } from './session.ts'
import { JwksUnavailableError, TokenRejected } from './errors.ts'
import type { TokenVerifier } from './verify.ts'
import { bearerChallenge, type BearerChallenge } from './www-authenticate.ts'
import { AuthgateConfigError } from '../core/config-error.ts'
import { ROUTE_ACCESS } from '../openapi/types.ts'
import { documentedAccess } from './access.ts'
import { scopePolicy, type ScopePolicy } from './scopes.ts'

/** What the route hooks need: built once by the protect plugin, shared by every protected route. */
export interface Protection {
  readonly verifier: TokenVerifier
  readonly sessions: SessionChecker | undefined
  /** Absolute URL of the RFC 9728 metadata, when served. */
  readonly resourceMetadataUrl: string | undefined
  /** The declared protected resources (the protect options' `resources`): identifier → metadata URL. */
  readonly resources: ReadonlyMap<string, string>
  /** The scopes routes may require: those the authorization server grants, and the access-token hook's. */
  readonly scopes: ScopePolicy
  /** Throws when a requirement cannot be met as configured (an undeclared resource, a scope nobody grants). */
  check(auth: RouteAuth, where: string): void
  /** An `onRequest` hook enforcing one requirement (for routes not built with `defineRoute`). */
  hook(auth: AuthOption): onRequestHookHandler
  /** Runs the checks; answers the request itself when they fail. */
  authenticate(request: FastifyRequest, reply: FastifyReply, auth: RouteAuth): Promise<FastifyReply | undefined>
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified access token's claims on a protected route; null when absent (optional routes, unprotected routes). */
    user: AuthUser | null
  }
  interface FastifyInstance {
    /** Set by the protect plugin; routes with an `auth` requirement use it. */
    authgateProtect?: Protection
  }
}

const BEARER = /^Bearer +(\S+) *$/i

function fail(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  description: string | undefined,
  challenge: BearerChallenge,
): FastifyReply {
  return sendError(request, reply, code, description, { 'www-authenticate': bearerChallenge(challenge) })
}

export function createProtection(
  verifier: TokenVerifier,
  sessions: SessionChecker | undefined,
  resourceMetadataUrl: string | undefined,
  more: { resources?: ReadonlyMap<string, string>; scopes?: ScopePolicy } = {},
): Protection {
  const resources = more.resources ?? new Map<string, string>()
  const scopes = more.scopes ?? scopePolicy()
  async function authenticate(
    request: FastifyRequest,
    reply: FastifyReply,
    auth: RouteAuth,
  ): Promise<FastifyReply | undefined> {
    let resourceMetadata = resourceMetadataUrl
    if (auth.resource !== undefined) {
      resourceMetadata = resources.get(auth.resource)
      if (resourceMetadata === undefined) {
        request.log.error(
          { resource: auth.resource },
          'protect: the route names a resource the protect options do not declare in `resources`; refusing',
        )
        return sendError(request, reply, 'unexpected_failure')
      }
    }
    let header = request.headers.authorization
    const gate = request.server.authgateSessions
    if (gate !== undefined && (header === undefined || header === '' || gate.standInOf(header) !== undefined)) {
      // Cookie sessions: the cookie (and a stand-in shown with it) stands for the bearer; the
      // application sees the real header.
      const cookie = await gate.authenticate(request, reply)
      if (cookie !== undefined && 'answered' in cookie) return cookie.answered
      if (cookie !== undefined) {
        header = `Bearer ${cookie.session.session.accessToken}`
        request.headers.authorization = header
      }
    }
    if (header === undefined || header === '') {
      if (auth.mode === 'optional') return undefined
      // RFC 6750 §3.1: a request without credentials gets no error code, only the challenge.
      // MCP clients ask for the scopes a 401 names before those of the metadata; only scopes a
      // client can ask for are named.
      const scope = auth.resource !== undefined ? scopes.requestable(auth.scopes).join(' ') : ''
      return fail(request, reply, 'no_authorization', undefined, {
        resourceMetadata,
        ...(scope !== '' ? { scope } : {}),
      })
    }
    const match = BEARER.exec(header)
    if (!match) {
      // RFC 6750 §3.1: a malformed request is invalid_request, answered 400.
      request.log.info('protect: the Authorization header is not "Bearer <access token>"')
      return fail(request, reply, 'bad_authorization_header', undefined, {
        error: 'invalid_request',
        description: 'the Authorization header must be Bearer <access token>',
        resourceMetadata,
      })
    }

    let user: AuthUser
    try {
      user = await verifier.verify(match[1]!, acceptedAudiences(auth))
    } catch (err) {
      if (err instanceof TokenRejected) {
        return fail(request, reply, 'bad_jwt', err.message, {
          error: 'invalid_token',
          description: err.message,
          resourceMetadata,
        })
      }
      if (err instanceof JwksUnavailableError) {
        request.log.error({ err }, 'protect: the signing keys could not be fetched')
        return sendError(request, reply, err.timeout ? 'request_timeout' : 'backend_unreachable')
      }
      throw err
    }

    if (auth.resource !== undefined || auth.clients.length > 0) {
      // An OAuth resource (an MCP server) is for tokens issued to a client, never a first-party
      // session's, even when the access-token hook gave that session the resource's audience.
      if (user.client_id === undefined) {
        const d = 'this resource accepts only access tokens issued to an OAuth client'
        return fail(request, reply, 'bad_jwt', d, { error: 'invalid_token', description: d, resourceMetadata })
      }
      if (auth.clients.length > 0 && !auth.clients.includes(user.client_id)) {
        // No `error`: a new authorization by the same client would be refused again (RFC 6750 §3 leaves it out).
        const d = 'this operation does not accept tokens issued to this OAuth client'
        return fail(request, reply, 'client_not_allowed', d, { description: d, resourceMetadata })
      }
    }
    if (auth.roles.length > 0 && !auth.roles.includes(user.role)) {
      const d = `this operation needs the role ${auth.roles.join(' or ')}`
      return fail(request, reply, 'insufficient_role', d, {
        error: 'insufficient_scope',
        description: d,
        resourceMetadata,
      })
    }
    if (auth.aal !== undefined && aalRank(user.aal) < aalRank(auth.aal)) {
      const d = `this operation needs assurance level ${auth.aal}; the session is at ${user.aal ?? 'none'}`
      // RFC 9470: 401 with the levels that would do; the client steps up (MFA) and comes back
      // with a new token. Supabase's assurance levels are the authentication context classes here.
      return fail(request, reply, 'insufficient_aal', d, {
        error: 'insufficient_user_authentication',
        description: d,
        acrValues: (['aal1', 'aal2', 'aal3'] as const).filter((l) => aalRank(l) >= aalRank(auth.aal!)).join(' '),
        resourceMetadata,
      })
    }
    if (auth.scopes.length > 0 && user.client_id !== undefined) {
      const missing = auth.scopes.filter((s) => !user.scopes.includes(s))
      if (missing.length > 0) {
        const d = `this operation needs the scope ${missing.join(' ')}`
        // The challenge names only scopes a client can ask for; when the access-token hook alone
        // grants what is missing, asking again would not help, and the challenge says no `error`.
        const requestable = scopes.requestable(auth.scopes)
        const askable = scopes.requestable(missing).length > 0
        return fail(request, reply, 'insufficient_scope', d, {
          ...(askable ? { error: 'insufficient_scope' as const, scope: requestable.join(' ') } : {}),
          description: d,
          resourceMetadata,
        })
      }
    }
    if (auth.session) {
      if (!sessions)
        throw new AuthgateConfigError(
          'auth.session',
          'a route asks for a session check but `sessionCheck` is not configured',
        )
      let state
      try {
        state = await sessions.check(user)
      } catch (err) {
        if (!(err instanceof SessionCheckUnavailableError)) throw err
        request.log.error({ err }, 'protect: the session check could not reach Supabase Auth')
        return sendError(request, reply, err.timeout ? 'request_timeout' : 'backend_unreachable')
      }
      if (!state.alive) {
        const d = `the session of this access token has ended (${state.reason})`
        return fail(request, reply, 'session_not_found', d, {
          error: 'invalid_token',
          description: d,
          resourceMetadata,
        })
      }
    }
    request.user = user
    return undefined
  }

  return {
    verifier,
    sessions,
    resourceMetadataUrl,
    resources,
    scopes,
    authenticate,
    check,
    hook(option) {
      const auth = normaliseAuth(option)
      if (auth.session && !sessions)
        throw new AuthgateConfigError('auth.session', '`session: true` needs `sessionCheck` in the protect options')
      check(auth, 'auth')
      const guard: onRequestHookHandler = (request, reply) => authenticate(request, reply, auth)
      // The route it protects documents its 401 (and 403) with the challenge, as defineRoute's do.
      return Object.assign(guard, { [ROUTE_ACCESS]: documentedAccess(auth) })
    },
  }

  function check(auth: RouteAuth, where: string): void {
    if (auth.resource !== undefined && !resources.has(auth.resource))
      throw new AuthgateConfigError(
        `${where}.resource`,
        `${auth.resource} is not declared in protect's \`resources\` (which serves its RFC 9728 metadata)`,
      )
    scopes.check(auth.scopes, `${where}.scope`)
  }
}

/**
 * The hook `defineRoute` puts on a route with an `auth` option. It finds the protection through
 * the route's instance, so routes can be defined before (or without knowing) how authgate was
 * set up; a route with a requirement and no protect plugin is refused with 500, never let through.
 */
export function routeAuthHook(auth: RouteAuth): onRequestHookHandler {
  return async function (this: FastifyInstance, request, reply) {
    const protection = this.authgateProtect
    if (!protection) {
      request.log.error(
        { url: request.routeOptions.url },
        'protect: this route requires a token but the protect plugin is not registered; refusing',
      )
      return sendError(request, reply, 'unexpected_failure')
    }
    if (auth.session && !protection.sessions) {
      request.log.error('protect: a route asks for a session check but sessionCheck is not configured; refusing')
      return sendError(request, reply, 'unexpected_failure')
    }
    return protection.authenticate(request, reply, auth)
  }
}

export { canForbid }
