import type { AuthAssuranceLevel } from './claims.ts'
import { isRecord } from '../core/is-record.ts'
import { AuthgateConfigError } from '../core/config-error.ts'

/** What a route asks of the caller's access token. */
export interface AuthRequirement {
  /** `required` (default): no valid token, no entry. `optional`: no token is fine (`request.user` is null), a bad one is not. */
  mode?: 'required' | 'optional'
  /** The token's `role` must be one of these (e.g. `authenticated`, or a role set by an access-token hook). */
  role?: string | readonly string[]
  /** Least assurance level: `aal2` means the user completed MFA in this session. */
  aal?: AuthAssuranceLevel
  /** Scopes an OAuth client's token must carry (first-party sessions carry no scopes and are not limited by them). */
  scope?: string | readonly string[]
  /** Also ask Supabase Auth whether the session is still alive (needs `sessionCheck` in the protect options). */
  session?: boolean
}

/** A route's `auth` option: the shorthand strings, or a requirement. */
export type AuthOption = 'required' | 'optional' | AuthRequirement

/** The requirement as the hook and the document builder read it (`config.auth` of a route). */
export interface RouteAuth {
  mode: 'required' | 'optional'
  roles: string[]
  aal: AuthAssuranceLevel | undefined
  scopes: string[]
  session: boolean
}

const list = (v: string | readonly string[] | undefined): string[] =>
  v === undefined ? [] : typeof v === 'string' ? [v] : [...v]

export function normaliseAuth(option: AuthOption): RouteAuth {
  const r: AuthRequirement = typeof option === 'string' ? { mode: option } : option
  if (r.mode !== undefined && r.mode !== 'required' && r.mode !== 'optional')
    throw new AuthgateConfigError('auth.mode', `must be 'required' or 'optional', got ${JSON.stringify(r.mode)}`)
  if (r.aal !== undefined && !['aal1', 'aal2', 'aal3'].includes(r.aal))
    throw new AuthgateConfigError('auth.aal', `must be aal1, aal2 or aal3, got ${JSON.stringify(r.aal)}`)
  return {
    mode: r.mode ?? 'required',
    roles: list(r.role),
    aal: r.aal,
    scopes: list(r.scope),
    session: r.session === true,
  }
}

/**
 * True when the route can answer 403: a valid token refused for its role or scope. A too-low
 * assurance level answers 401 instead (RFC 9470: the client needs a new token), listed anyway.
 */
export function canForbid(auth: RouteAuth): boolean {
  return auth.roles.length > 0 || auth.scopes.length > 0
}

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string')

/**
 * Reads `config.auth` back from a registered route: the requirement `defineRoute` normalised once,
 * taken as it is (normalising it again would read `role`/`scope` where it holds `roles`/`scopes`).
 * Anything not of that shape is treated as no requirement.
 */
export function routeAuthOf(config: unknown): RouteAuth | undefined {
  if (!isRecord(config) || !isRecord(config.auth)) return undefined
  const a = config.auth
  if (a.mode !== 'required' && a.mode !== 'optional') return undefined
  if (!isStringList(a.roles) || !isStringList(a.scopes)) return undefined
  if (a.aal !== undefined && a.aal !== 'aal1' && a.aal !== 'aal2' && a.aal !== 'aal3') return undefined
  return { mode: a.mode, roles: [...a.roles], aal: a.aal, scopes: [...a.scopes], session: a.session === true }
}
