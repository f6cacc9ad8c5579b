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
  /**
   * The `aud` values this route accepts, in place of the protect options' `audience` (one of them
   * must be in the token's `aud`). Default: the resource's identifier on a `resource` route.
   */
  audience?: string | readonly string[]
  /** Only tokens issued to these OAuth clients (`client_id`): a first-party session token is refused. */
  clients?: string | readonly string[]
  /**
   * The route belongs to this OAuth protected resource (an MCP server): its identifier, declared in
   * the protect options' `resources`. Only tokens issued to an OAuth client for it are accepted
   * (`aud` names it, as Supabase Auth's access-token hook sets it: docs/mcp.md), never a session
   * token, and its challenges name the resource's own RFC 9728 metadata.
   */
  resource?: string
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
  /** Accepted `aud` values; empty: the verifier's (the protect options' `audience`). */
  audiences: string[]
  /** Accepted OAuth `client_id`s; empty: any (a `resource` route still requires one). */
  clients: string[]
  /** The protected resource's identifier (`resource` in its metadata), or undefined. */
  resource: string | undefined
}

const list = (v: string | readonly string[] | undefined): string[] =>
  v === undefined ? [] : typeof v === 'string' ? [v] : [...v]

export function normaliseAuth(option: AuthOption): RouteAuth {
  const r: AuthRequirement = typeof option === 'string' ? { mode: option } : option
  if (r.mode !== undefined && r.mode !== 'required' && r.mode !== 'optional')
    throw new AuthgateConfigError('auth.mode', `must be 'required' or 'optional', got ${JSON.stringify(r.mode)}`)
  if (r.aal !== undefined && !['aal1', 'aal2', 'aal3'].includes(r.aal))
    throw new AuthgateConfigError('auth.aal', `must be aal1, aal2 or aal3, got ${JSON.stringify(r.aal)}`)
  const resource = r.resource === undefined ? undefined : resourceIdentifier(r.resource, 'auth.resource')
  const audiences = list(r.audience)
  if (r.audience !== undefined && (audiences.length === 0 || audiences.some((a) => typeof a !== 'string' || a === '')))
    throw new AuthgateConfigError('auth.audience', 'must be a non-empty string or a non-empty list of them')
  const clients = list(r.clients)
  if (r.clients !== undefined && (clients.length === 0 || clients.some((c) => typeof c !== 'string' || c === '')))
    throw new AuthgateConfigError('auth.clients', 'must be a non-empty string or a non-empty list of them')
  return {
    mode: r.mode ?? 'required',
    roles: list(r.role),
    aal: r.aal,
    scopes: list(r.scope),
    session: r.session === true,
    audiences,
    clients,
    resource,
  }
}

/**
 * A protected resource's identifier as its metadata states it and as the token's `aud` names it:
 * an absolute http(s) URL without query or fragment, trailing slashes of the path removed (the
 * MCP SDK checks that the URL it connected to starts with it).
 */
export function resourceIdentifier(value: string, option: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new AuthgateConfigError(option, `must be an absolute URL, got ${JSON.stringify(value)}`)
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new AuthgateConfigError(option, `must be an http or https URL, got ${JSON.stringify(value)}`)
  if (url.search !== '' || url.hash !== '' || value.includes('#') || value.includes('?'))
    throw new AuthgateConfigError(option, `must have no query or fragment, got ${JSON.stringify(value)}`)
  return value.replace(/\/+$/, '')
}

/**
 * The `aud` values a route accepts: its own, else its resource's identifier (also as the URL
 * serialiser writes it: `https://api.example.com/` for an origin), else undefined for the verifier's.
 */
export function acceptedAudiences(auth: RouteAuth): string[] | undefined {
  if (auth.audiences.length > 0) return auth.audiences
  if (auth.resource === undefined) return undefined
  const href = new URL(auth.resource).href
  return href === auth.resource ? [auth.resource] : [auth.resource, href]
}

/**
 * True when the route can answer 403: a valid token refused for its role or scope. A too-low
 * assurance level answers 401 instead (RFC 9470: the client needs a new token), listed anyway.
 */
export function canForbid(auth: RouteAuth): boolean {
  return auth.roles.length > 0 || auth.scopes.length > 0 || auth.clients.length > 0
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
  // Requirements stored before audiences, clients and resources existed read as having none.
  const audiences = a.audiences ?? []
  const clients = a.clients ?? []
  if (!isStringList(audiences) || !isStringList(clients)) return undefined
  if (a.resource !== undefined && typeof a.resource !== 'string') return undefined
  return {
    mode: a.mode,
    roles: [...a.roles],
    aal: a.aal,
    scopes: [...a.scopes],
    session: a.session === true,
    audiences: [...audiences],
    clients: [...clients],
    resource: a.resource,
  }
}
