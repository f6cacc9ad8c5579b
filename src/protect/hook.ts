import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { sendError, type ErrorCode } from '../errors.ts'
import { aalRank, type AuthUser } from './claims.ts'
import { canForbid, normaliseAuth, type AuthOption, type RouteAuth } from './requirement.ts'
import { SessionCheckUnavailableError, type SessionChecker } from './session.ts'
import { JwksUnavailableError, TokenRejected } from './errors.ts'
import type { TokenVerifier } from './verify.ts'
import { bearerChallenge, type BearerChallenge } from './www-authenticate.ts'
import { AuthgateConfigError } from '../core/config-error.ts'
import { ROUTE_ACCESS } from '../openapi/types.ts'
import { documentedAccess } from './access.ts'

/** What the route hooks need: built once by the protect plugin, shared by every protected route. */
export interface Protection {
  readonly verifier: TokenVerifier
  readonly sessions: SessionChecker | undefined
  /** Absolute URL of the RFC 9728 metadata, when served. */
  readonly resourceMetadataUrl: string | undefined
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
): Protection {
  const resourceMetadata = resourceMetadataUrl

  async function authenticate(
    request: FastifyRequest,
    reply: FastifyReply,
    auth: RouteAuth,
  ): Promise<FastifyReply | undefined> {
    let header = request.headers.authorization
    if ((header === undefined || header === '') && request.server.authgateSessions !== undefined) {
      // Cookie sessions: the cookie stands for the bearer; the application sees the header too.
      const cookie = await request.server.authgateSessions.authenticate(request, reply)
      if (cookie !== undefined && 'answered' in cookie) return cookie.answered
      if (cookie !== undefined) {
        header = `Bearer ${cookie.session.session.accessToken}`
        request.headers.authorization = header
      }
    }
    if (header === undefined || header === '') {
      if (auth.mode === 'optional') return undefined
      // RFC 6750 §3.1: a request without credentials gets no error code, only the challenge.
      return fail(request, reply, 'no_authorization', undefined, { resourceMetadata })
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
      user = await verifier.verify(match[1]!)
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
        return fail(request, reply, 'insufficient_scope', d, {
          error: 'insufficient_scope',
          description: d,
          scope: auth.scopes.join(' '),
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
    authenticate,
    hook(option) {
      const auth = normaliseAuth(option)
      if (auth.session && !sessions)
        throw new AuthgateConfigError('auth.session', '`session: true` needs `sessionCheck` in the protect options')
      const check: onRequestHookHandler = (request, reply) => authenticate(request, reply, auth)
      // The route it protects documents its 401 (and 403) with the challenge, as defineRoute's do.
      return Object.assign(check, { [ROUTE_ACCESS]: documentedAccess(auth) })
    },
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
