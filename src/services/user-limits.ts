import type { FastifyReply, FastifyRequest } from 'fastify'
import { jwtVerify } from 'jose'
import { AuthgateConfigError } from '../config/env.ts'
import { parseRouteKey } from '../core/route-key.ts'
import { createJwks, type Jwks } from '../protect/jwks.ts'
import { ASYMMETRIC_ALGORITHMS } from '../protect/verify.ts'
import { parseRate, policyHeader, type RateLimitPolicy, type RateLimitStore } from '../ratelimit/index.ts'
import { sendServiceError } from './errors.ts'
import type { SessionGate } from '../sessions/gate.ts'
import { SERVICE_METHODS, SERVICE_TABLE, serviceRouteKeys, serviceTemplate } from './table.ts'

/**
 * AUTHGATE_USER_RATE_LIMIT_ROUTES: per-user rates on the service routes, written as
 * AUTHGATE_RATE_LIMIT_ROUTES writes them (`GET /rest/v1/*=600/1m`), keyed by route.
 */
export function parseUserLimits(variable: string, raw: string | undefined): Map<string, RateLimitPolicy> {
  const known = new Set(serviceRouteKeys())
  const sockets = new Set(
    SERVICE_TABLE.filter((row) => row.websocket).flatMap((row) =>
      SERVICE_METHODS.map((method) => `${method} ${serviceTemplate(row)}`),
    ),
  )
  const out = new Map<string, RateLimitPolicy>()
  const byPath = new Map<string, RateLimitPolicy>()
  for (const item of (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = item.indexOf('=')
    const route = eq < 0 ? undefined : parseRouteKey(item.slice(0, eq))
    if (route === undefined)
      throw new AuthgateConfigError(variable, `expected "METHOD /path=RATE", got ${JSON.stringify(item)}`)
    if (!known.has(route.key))
      throw new AuthgateConfigError(
        variable,
        `no such service route ${JSON.stringify(route.key)} (e.g. "GET /rest/v1/*")`,
      )
    // realtime-js sends only the key with the handshake (`apikey`, `vsn`); the user's token comes
    // later, in the channels' join messages, which the relay does not read for limits.
    if (sockets.has(route.key))
      throw new AuthgateConfigError(
        variable,
        `${route.key} is the socket handshake, which carries no user's token (realtime-js sends it in the channel's join message); limit it per client with AUTHGATE_RATE_LIMIT_ROUTES`,
      )
    const policy = parseRate(
      variable,
      item.slice(eq + 1).trim(),
      `user-${route.path.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '')}`,
    )
    // One bucket per user and path, as per client (D103): one rate for the methods of a path.
    const other = byPath.get(route.path)
    if (
      other !== undefined &&
      (other.limit !== policy.limit || other.windowMs !== policy.windowMs || other.burst !== policy.burst)
    )
      throw new AuthgateConfigError(variable, `the methods of ${route.path} share one bucket and need the same rate`)
    byPath.set(route.path, policy)
    out.set(route.key, other ?? policy)
  }
  return out
}

/**
 * The bearer of a request when it is a JWT (not a key: `sb_…`), else undefined, read as the
 * services read it: the first piece after the `Bearer` scheme (in any case), whatever follows it.
 * PostgREST takes the second piece of the header split on spaces (`"Bearer" : t : _`), Realtime's
 * API and Storage the piece after the scheme: a stricter reading here (nothing after the token)
 * would let `Bearer <jwt> x` reach PostgREST as the user without being counted for the user.
 * Reading any whitespace as the separator counts some requests a service reads as anonymous
 * (`Bearer\t<jwt>` for PostgREST); that only spends the budget of the user whose token was sent.
 */
function bearerJwt(request: FastifyRequest): string | undefined {
  const m = /^bearer\s+(eyJ\S+)/i.exec(request.headers.authorization ?? '')
  return m?.[1]
}

/**
 * The per-user limit of one service path: the user is the `sub` of the request's access token,
 * verified with Supabase Auth's key set (an unverified `sub` would let anyone spend another user's
 * budget). With cookie sessions, a stand-in is first swapped for the session's real token (as the
 * proxy then sends it: one swap per request), so the user behind it is counted; a stand-in that is
 * refused counts for nobody and the proxy answers the refusal. A request without a token, with a
 * key or an HS256 token, or one that does not verify, is not counted here (the per-client limit
 * still applies). A store that cannot decide lets it through.
 */
export function userLimitHook(
  template: string,
  policies: ReadonlyMap<string, RateLimitPolicy>,
  store: RateLimitStore,
  jwks: () => Jwks,
  sessions: () => SessionGate | undefined = () => undefined,
): ((request: FastifyRequest, reply: FastifyReply) => Promise<unknown>) | undefined {
  if (policies.size === 0) return undefined
  return async function userLimit(request, reply) {
    const policy = policies.get(`${request.method} ${template}`)
    if (policy === undefined) return undefined
    let token = bearerJwt(request)
    const gate = sessions()
    if (gate !== undefined && gate.standInOf(request.headers.authorization) !== undefined) {
      const swap = await gate.forService(request, reply)
      token = swap !== undefined && 'accessToken' in swap ? swap.accessToken : undefined
    }
    if (token === undefined) return undefined
    let sub: unknown
    try {
      ;({
        payload: { sub },
      } = await jwtVerify(token, jwks().getKey, { algorithms: [...ASYMMETRIC_ALGORITHMS] }))
    } catch {
      return undefined
    }
    if (typeof sub !== 'string' || sub === '') return undefined
    let decision
    try {
      decision = await store.take(`user|${template}|${sub}`, policy)
    } catch {
      return undefined
    }
    reply.header('RateLimit-Policy', policyHeader(policy))
    if (decision.allowed) return undefined
    reply.header('Retry-After', String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000))))
    request.log.info({ limit: 'user', route: `${request.method} ${template}` }, 'rate limit reached')
    sendServiceError(reply, 'over_request_rate_limit', 'Too many requests for this user; try again later')
    return reply
  }
}

/** Supabase Auth's key set, fetched when first needed. */
export function lazyJwks(url: () => URL): () => Jwks {
  let jwks: Jwks | undefined
  return () => (jwks ??= createJwks({ url: url() }))
}
