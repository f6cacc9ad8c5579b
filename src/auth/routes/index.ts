import type { RouteGroup } from '../../core/route-groups.ts'
import { coreRoutes } from './core.ts'
import type { AuthRoute, RouteIdOf } from './entry.ts'
import { routeKey } from '../../core/route-key.ts'
import type { LimitableRoute } from '../../ratelimit/abuse-config.ts'
import { identityRoutes } from './identities.ts'
import { mfaRoutes } from './mfa.ts'
import { oauthServerRoutes, oauthUserRoutes } from './oauth.ts'
import { passkeyRoutes } from './passkeys.ts'
import { ssoRoutes } from './sso.ts'
import { nullableOptionals } from '../types/nullable.ts'
import { emptyAdmitted, nulDocumented } from '../types/presence.ts'

export type { AuthRoute, AuthTag, GroupDefaults, HttpMethod, RequestExample, ResponseDoc } from './entry.ts'

/**
 * Every mounted route, in the order of the OpenAPI document's paths and of the `Allow` header of
 * a 405. After the core and the OAuth server: everything else supabase-js calls on the user's
 * behalf (passkeys, MFA, identity linking, SSO, the consent page and grants of the OAuth server).
 * The admin API stays unmounted.
 */
const TABLE = [
  ...coreRoutes,
  ...oauthServerRoutes,
  ...passkeyRoutes,
  ...mfaRoutes,
  ...identityRoutes,
  ...ssoRoutes,
  ...oauthUserRoutes,
]

/**
 * The route table as mounted and documented. Mounting (src/auth/mount.ts), rate limiting and the
 * OpenAPI document all read it and nothing else lists routes. Every optional property of a request
 * body also takes `null`, which Supabase Auth reads as absent (src/auth/types/nullable.ts), and
 * the fields a route's handler reads as absent when empty also take `""` (src/auth/types/presence.ts).
 */
export const AUTH_ROUTES: readonly AuthRoute[] = TABLE.map((route: AuthRoute) =>
  route.body
    ? {
        ...route,
        body: nullableOptionals(emptyAdmitted(nulDocumented(route.body, route.nulRefused), route.emptyIsAbsent)),
      }
    : route,
)

/** The name of a mounted route, `METHOD /template`: a typo in a table keyed by route fails the type check. */
export type RouteId = RouteIdOf<(typeof TABLE)[number]>

const IDS: ReadonlySet<string> = new Set(AUTH_ROUTES.map((r) => routeKey(r.method, r.path)))

/** `METHOD /template` names used by configuration (e.g. AUTHGATE_RATE_LIMITED_ROUTES). */
export const routeName = (r: Pick<AuthRoute, 'method' | 'path'>): RouteId => routeKey(r.method, r.path) as RouteId

/** Whether a normalised name (src/core/route-key.ts) is one of the mounted routes. */
export const isRouteId = (name: string): name is RouteId => IDS.has(name)

export const DEFAULT_RATE_LIMITED: readonly RouteId[] = AUTH_ROUTES.filter((r) => r.rateLimited).map(routeName)

/** What the rate limiter reads of each route: limited by default, per account, sending messages. */
export const LIMITABLE_ROUTES: readonly LimitableRoute[] = AUTH_ROUTES.map((r) => ({
  key: routeName(r),
  rateLimited: r.rateLimited,
  account: r.account,
  sendsMessages: r.sendsMessages,
}))

/** The routes that are mounted when the given groups are turned off. */
export function enabledRoutes(disabledGroups: readonly RouteGroup[] = []): AuthRoute[] {
  return AUTH_ROUTES.filter((r) => !disabledGroups.includes(r.group))
}
