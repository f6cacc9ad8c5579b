import type { JSONWebKeySet } from 'jose'
import type { AuthUser } from './claims.ts'
import type { Jwks } from './jwks.ts'
import { AuthgateConfigError } from '../core/config-error.ts'

export interface TokenCacheOptions {
  /** Most tokens remembered at once (default 10 000; the least recently used are forgotten first). */
  maxEntries?: number
}

interface Entry {
  user: AuthUser
  /** The token's `exp`, in milliseconds: the entry is not used from then on. */
  expiresAtMs: number
  /** The key's `kid`, or undefined for an HS256 token (verified with the secret, which does not change). */
  kid: string | undefined
  /** The key set the key was last found in, and the key as it was there. */
  keys: JSONWebKeySet | undefined
  key: string | undefined
}

// One table per fetched set: `kid` → the key as JSON, to tell whether a token's key is still there, unchanged.
const keysByKid = new WeakMap<JSONWebKeySet, Map<string, string>>()
function keyIn(set: JSONWebKeySet, kid: string): string | undefined {
  let table = keysByKid.get(set)
  if (!table) {
    table = new Map()
    for (const jwk of set.keys) if (typeof jwk.kid === 'string') table.set(jwk.kid, JSON.stringify(jwk))
    keysByKid.set(set, table)
  }
  return table.get(kid)
}

/**
 * Successful verifications, keyed by the whole token, so a token that comes again costs a lookup
 * instead of a signature check. Only tokens that passed every check are stored; a token that
 * differs by one character (a forged signature, an edited claim) is another key and is verified
 * in full. An entry is used only until the token's `exp`, only while the key set is fresh (a stale
 * set means the next token is verified in full, which fetches it again), and only while the key
 * that verified it is in the current set unchanged: a key removed from the set (or replaced
 * under the same `kid`) ends its tokens' entries at the first request after the set is fetched.
 */
export class VerifiedTokenCache {
  readonly #max: number
  readonly #jwks: Jwks | undefined
  readonly #entries = new Map<string, Entry>()
  /** Lookups answered from the cache, and those that were not (for tests and the benchmark). */
  hits = 0
  misses = 0

  constructor(jwks: Jwks | undefined, options: TokenCacheOptions = {}) {
    const max = options.maxEntries ?? 10_000
    if (!Number.isInteger(max) || max < 1)
      throw new AuthgateConfigError('protect.tokenCache.maxEntries', `must be a positive integer, got ${max}`)
    this.#max = max
    this.#jwks = jwks
  }

  get size(): number {
    return this.#entries.size
  }

  /** The claims of a token verified before and still valid, or undefined. */
  get(token: string): AuthUser | undefined {
    const entry = this.#entries.get(token)
    if (entry === undefined || !this.#valid(entry)) {
      if (entry !== undefined) this.#entries.delete(token)
      this.misses++
      return undefined
    }
    // Most recently used last: eviction takes the first.
    this.#entries.delete(token)
    this.#entries.set(token, entry)
    this.hits++
    // A copy, so a handler that changes request.user changes nothing for the next request.
    return { ...entry.user }
  }

  /** Remembers a token that passed every check; `kid` from its header, `alg` to tell the secret from the key set. */
  set(token: string, user: AuthUser, alg: string, kid: string | undefined): void {
    let keys: JSONWebKeySet | undefined
    let key: string | undefined
    if (alg !== 'HS256') {
      keys = this.#jwks?.current()
      // A token without `kid` could be verified by whichever key fits; such tokens are not remembered.
      if (kid === undefined || keys === undefined) return
      key = keyIn(keys, kid)
      // Verified by a set that a concurrent fetch has since replaced without that key.
      if (key === undefined) return
    }
    const expiresAtMs = user.exp * 1000
    if (!(expiresAtMs > Date.now())) return
    this.#entries.delete(token)
    if (this.#entries.size >= this.#max) this.#entries.delete(this.#entries.keys().next().value!)
    this.#entries.set(token, { user, expiresAtMs, kid: alg === 'HS256' ? undefined : kid, keys, key })
  }

  #valid(entry: Entry): boolean {
    if (Date.now() >= entry.expiresAtMs) return false
    if (entry.keys === undefined) return true // HS256: the secret
    const jwks = this.#jwks!
    if (!jwks.fresh()) return false
    const current = jwks.current()
    if (current === entry.keys) return true
    if (current === undefined || keyIn(current, entry.kid!) !== entry.key) return false
    entry.keys = current
    return true
  }
}
