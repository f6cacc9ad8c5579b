import type { ResolvedKeys } from './config.ts'
import type { KeyRule } from './table.ts'

/** How much a key may do: the anon key's role, the service role's, or unknown (no keys configured). */
export type KeyLevel = 'anon' | 'service' | 'unchecked'

export type KeyVerdict =
  | {
      ok: true
      /** The key sent on (a new key's legacy JWT); undefined when the request has none. */
      key: string | undefined
      level: KeyLevel | undefined
    }
  | { ok: false; code: 'no_api_key' | 'invalid_api_key' | 'service_key_required' }

const NO_KEY: KeyVerdict = Object.freeze({ ok: true, key: undefined, level: undefined })
const NO_API_KEY: KeyVerdict = Object.freeze({ ok: false, code: 'no_api_key' })
const INVALID_API_KEY: KeyVerdict = Object.freeze({ ok: false, code: 'invalid_api_key' })
const SERVICE_KEY_REQUIRED: KeyVerdict = Object.freeze({ ok: false, code: 'service_key_required' })

/**
 * The project's keys as one lookup: each accepted key → what it may do and the key the upstreams
 * check (Kong's `LUA_AUTH_EXPR`: a secret key becomes the service-role JWT, a publishable key the
 * anon JWT; the legacy JWTs stand for themselves).
 */
export class KeyBook {
  readonly #keys = new Map<string, { level: 'anon' | 'service'; sent: string; verdict: KeyVerdict }>()
  readonly #checked: boolean
  /** `Bearer <key>` of each key sent on, spelled once (a legacy JWT is a few hundred characters). */
  readonly #bearers = new Map<string, string>()
  /** The legacy service-role JWT, when configured (authgate's own requests that need every table). */
  readonly serviceKey: string | undefined
  // The last unchecked key's verdict and `Bearer` header (`judge`, `bearer`).
  #lastUnchecked: { readonly ok: true; readonly key: string; readonly level: 'unchecked' } | undefined
  #lastBearerKey: string | undefined
  #lastBearer = ''

  constructor(keys: ResolvedKeys | undefined) {
    this.#checked = keys !== undefined
    this.serviceKey = keys?.service
    if (keys === undefined) return
    if (keys.anon !== undefined) this.#add(keys.anon, 'anon', keys.anon)
    if (keys.service !== undefined) this.#add(keys.service, 'service', keys.service)
    for (const k of keys.publishable) this.#add(k, 'anon', keys.anon!)
    for (const k of keys.secret) this.#add(k, 'service', keys.service!)
  }

  // A known key's verdict is made once, not on every request: verdicts are only read.
  #add(key: string, level: 'anon' | 'service', sent: string): void {
    this.#keys.set(key, { level, sent, verdict: Object.freeze({ ok: true, key: sent, level }) })
    this.#bearers.set(sent, `Bearer ${sent}`)
  }

  /** `Bearer <key>` for a key sent on (the configured keys' spelled once). */
  bearer(key: string): string {
    const known = this.#bearers.get(key)
    if (known !== undefined) return known
    // An unchecked key (no keys configured): the last one's header is kept, since a client sends
    // the same key on every request, where a new string was built and flattened for each.
    if (key !== this.#lastBearerKey) {
      this.#lastBearerKey = key
      this.#lastBearer = `Bearer ${key}`
    }
    return this.#lastBearer
  }

  /**
   * The verdict on the key a request presents under a service's rule. Without configured keys every
   * key passes as it came: the upstreams (or hosted Supabase's gateway) judge it.
   */
  judge(presented: string | undefined, rule: KeyRule): KeyVerdict {
    if (presented === undefined || presented === '') return rule === 'optional' ? NO_KEY : NO_API_KEY
    if (!this.#checked) {
      // Verdicts are only read: the last unchecked key's is kept, as a client sends the same key on
      // every request (a verdict object per request otherwise).
      const last = this.#lastUnchecked
      if (last !== undefined && last.key === presented) return last
      this.#lastUnchecked = Object.freeze({ ok: true, key: presented, level: 'unchecked' })
      return this.#lastUnchecked
    }
    const known = this.#keys.get(presented)
    if (known === undefined) return INVALID_API_KEY
    if (rule === 'service' && known.level !== 'service') return SERVICE_KEY_REQUIRED
    return known.verdict
  }
}

/** A new-style key (`sb_publishable_…`, `sb_secret_…`), which is never a user's token. */
export function isNewKey(value: string): boolean {
  return value.startsWith('sb_')
}

/**
 * The bearer of an `Authorization` header when it is a key rather than a user's JWT
 * (`Bearer sb_…`), else undefined.
 */
export function keyInAuthorization(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined
  const m = /^bearer\s+(\S+)\s*$/i.exec(authorization)
  return m !== null && isNewKey(m[1]!) ? m[1] : undefined
}

/** The first `apikey` of a query string (undefined when none), decoded. */
export function queryKey(query: string): string | undefined {
  // Most queries (`select=*`) name no key: no list of their pairs is made to find that out.
  if (!query.includes('apikey')) return undefined
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=')
    const name = eq === -1 ? pair : pair.slice(0, eq)
    if (name !== 'apikey') continue
    try {
      return decodeURIComponent(pair.slice(eq + 1).replaceAll('+', ' '))
    } catch {
      return pair.slice(eq + 1)
    }
  }
  return undefined
}

/** The query with every `apikey` value replaced by `key` (the other parameters kept byte for byte). */
export function withQueryKey(query: string, key: string): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      return (eq === -1 ? pair : pair.slice(0, eq)) === 'apikey' ? `apikey=${encodeURIComponent(key)}` : pair
    })
    .join('&')
}
