import { AuthgateConfigError } from '../core/config-error.ts'

/**
 * The scopes Supabase Auth's OAuth server grants: it refuses an authorization that asks for any
 * other (`invalid_scope`), so a route that required another could never be reached by a client
 * that asked for what the route's challenge names.
 */
export const SUPABASE_AUTH_SCOPES: readonly string[] = ['openid', 'profile', 'email', 'phone', 'offline_access']

export interface ScopeOptions {
  /** What the authorization server grants (default: Supabase Auth's list above). */
  grantable?: readonly string[]
  /**
   * Scopes the access-token hook writes into the token's `scope` claim (docs/mcp.md): routes may
   * require them, but clients cannot ask for them, so they are never advertised or named in a
   * challenge.
   */
  fromHook?: readonly string[]
}

/** The scopes a route may require, split by who grants them. */
export interface ScopePolicy {
  readonly grantable: ReadonlySet<string>
  readonly fromHook: ReadonlySet<string>
  /** Throws AuthgateConfigError naming `where` when a scope is neither grantable nor the hook's. */
  check(scopes: readonly string[], where: string): void
  /** The scopes a client can ask for, of those given (what a challenge or metadata may name). */
  requestable(scopes: readonly string[]): string[]
}

const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/

export function scopePolicy(options: ScopeOptions = {}): ScopePolicy {
  const grantable = new Set(options.grantable ?? SUPABASE_AUTH_SCOPES)
  const fromHook = new Set(options.fromHook ?? [])
  for (const s of fromHook) {
    // RFC 6749 §3.3: a scope token is printable ASCII without space, `"` or `\`.
    if (!SCOPE_TOKEN.test(s))
      throw new AuthgateConfigError('protect.hookScopes', `${JSON.stringify(s)} is not a scope token (RFC 6749 §3.3)`)
    if (grantable.has(s))
      throw new AuthgateConfigError(
        'protect.hookScopes',
        `${s} is granted by the authorization server itself; list only scopes the access-token hook writes`,
      )
  }
  return {
    grantable,
    fromHook,
    check(scopes, where) {
      const unknown = scopes.filter((s) => !grantable.has(s) && !fromHook.has(s))
      if (unknown.length === 0) return
      throw new AuthgateConfigError(
        where,
        `${unknown.join(' ')}: not a scope Supabase Auth's OAuth server grants (${[...grantable].join(' ')}); a client ` +
          'that asked for it would be refused. Require one of those, or have the access-token hook write it into the ' +
          "token's `scope` claim and list it in protect's `hookScopes` (docs/mcp.md)",
      )
    },
    requestable: (scopes) => scopes.filter((s) => grantable.has(s)),
  }
}
