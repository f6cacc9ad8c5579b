import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import type { SessionKey } from './crypto.ts'

/**
 * Stand-ins (the phantom-token pattern, docs/sessions.md): what a cookie-mode session answer carries
 * in place of Supabase Auth's tokens, so that supabase-js holds a session of the shape it expects
 * while no credential usable elsewhere reaches the page.
 *
 * - The access stand-in is JWT-shaped, because auth-js decodes the payload (`exp` to schedule its
 *   refresh, `aal`/`amr` for MFA, the claims of `getClaims()`): the real token's claims, the same
 *   `exp`, and `asb`, a binding to the cookie's session. It is signed with HS256 under a key derived
 *   from AUTHGATE_SESSION_KEYS, which no other service holds, so PostgREST, Storage, Realtime or
 *   Supabase Auth refuse it if it ever reaches them directly; `getClaims()` checks an HS256 token
 *   by asking `GET /user`, which authgate answers through the cookie.
 * - The refresh stand-in is opaque: `agr.<key id>.<mac>`.
 *
 * Both are derived from the session's handle (the hash of the cookie's id), never from the id
 * itself, and both are worthless without the cookie: authgate swaps them for the real tokens only
 * on a request whose cookie is the session they were made for.
 */

/** The JWT header's `kid` of an access stand-in: this prefix and the key id. */
const KID_PREFIX = 'authgate-stand-in:'
const REFRESH_PREFIX = 'agr.'
const INFO = 'authgate stand-in tokens'

/**
 * Why a presented stand-in does not stand for the request's session; `retired`: made under a key
 * AUTHGATE_SESSION_KEYS no longer lists.
 */
export type StandInFault = 'forged' | 'retired' | 'expired' | 'other_session'

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url')

/** The header segment of an access stand-in made under key `kid` (always the same bytes). */
const headOf = (kid: string) => b64(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: KID_PREFIX + kid }))

/**
 * What every access stand-in's header segment starts with, whatever its key: the base64url of the
 * header's bytes up to the key id, cut to whole 3-byte groups so its characters never depend on
 * what follows.
 */
const HEAD_START = (() => {
  const fixed = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: KID_PREFIX }).slice(0, -2))
  return b64(fixed.subarray(0, fixed.length - (fixed.length % 3)))
})()

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** The claims of a JWT's payload, without checking anything (undefined when it is not one). */
export function jwtClaims(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.')
  if (parts.length !== 3) return undefined
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown
    return typeof claims === 'object' && claims !== null && !Array.isArray(claims)
      ? (claims as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}

export class StandIns {
  readonly #current: string
  readonly #keys: Map<string, Buffer>
  /**
   * The JWT header segment of each key's access stand-ins → the key id: a stand-in is told apart
   * from a real token by one string lookup, on every bearer request the gate sees.
   */
  readonly #heads: Map<string, string>

  constructor(keys: readonly SessionKey[]) {
    this.#current = keys[0]!.id
    this.#keys = new Map(keys.map((k) => [k.id, Buffer.from(hkdfSync('sha256', k.key, '', INFO, 32))]))
    this.#heads = new Map(keys.map((k) => [headOf(k.id), k.id]))
  }

  #mac(keyId: string, text: string): string | undefined {
    const key = this.#keys.get(keyId)
    return key === undefined ? undefined : createHmac('sha256', key).update(text).digest('base64url')
  }

  /** The session binding carried in an access stand-in (`asb`). */
  #binding(keyId: string, handle: string): string | undefined {
    return this.#mac(keyId, `session\0${handle}`)?.slice(0, 32)
  }

  /** The access stand-in of a session's real access token: its claims and expiry, bound to the session. */
  access(handle: string, realAccessToken: string, expiresAt: number): string {
    const kid = this.#current
    const claims = { ...(jwtClaims(realAccessToken) ?? {}), exp: expiresAt, asb: this.#binding(kid, handle) }
    const head = `${headOf(kid)}.${b64(JSON.stringify(claims))}`
    return `${head}.${this.#mac(kid, head)!}`
  }

  /** The refresh stand-in of a session: the same for its whole life (the cookie is what it rests on). */
  refresh(handle: string): string {
    const kid = this.#current
    return `${REFRESH_PREFIX}${kid}.${this.#mac(kid, `refresh\0${handle}`)!}`
  }

  /**
   * Whether a bearer token has the shape of an access stand-in (by its header segment alone: it may
   * still be forged), a configured key's or one taken out of AUTHGATE_SESSION_KEYS since: the gate
   * refuses the latter itself, never taking it for the request's own real token. Anything else is
   * a real token to the gate, and verified as one.
   */
  isAccess(token: string): boolean {
    return this.#accessKid(token) !== undefined || this.isRetired(token)
  }

  /** Whether a bearer token is an access stand-in made under a key no longer configured (by its shape). */
  isRetired(token: string): boolean {
    if (!token.startsWith(HEAD_START) || this.#accessKid(token) !== undefined) return false
    const dot = token.indexOf('.')
    if (dot <= 0 || dot > 256) return false
    try {
      const head = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8')) as { kid?: unknown }
      return typeof head.kid === 'string' && head.kid.startsWith(KID_PREFIX)
    } catch {
      return false
    }
  }

  /** Whether a refresh token is a refresh stand-in (by its shape alone). */
  isRefresh(token: string): boolean {
    return token.startsWith(REFRESH_PREFIX)
  }

  #accessKid(token: string): string | undefined {
    const dot = token.indexOf('.')
    return dot <= 0 ? undefined : this.#heads.get(token.slice(0, dot))
  }

  /** Whether an access stand-in stands for the session of `handle` now: undefined when it does. */
  checkAccess(token: string, handle: string, nowSeconds: number): StandInFault | undefined {
    const kid = this.#accessKid(token)
    if (kid === undefined && this.isRetired(token)) return 'retired'
    const last = token.lastIndexOf('.')
    const mac = kid === undefined ? undefined : this.#mac(kid, token.slice(0, last))
    if (mac === undefined || !equal(mac, token.slice(last + 1))) return 'forged'
    const claims = jwtClaims(token)
    if (claims === undefined) return 'forged'
    if (typeof claims.asb !== 'string' || !equal(claims.asb, this.#binding(kid!, handle)!)) return 'other_session'
    if (typeof claims.exp !== 'number' || claims.exp <= nowSeconds) return 'expired'
    return undefined
  }

  /** Whether a refresh stand-in is the one of the session of `handle`. */
  checkRefresh(token: string, handle: string): boolean {
    const [prefix, kid, mac, extra] = token.split('.')
    if (`${prefix}.` !== REFRESH_PREFIX || kid === undefined || mac === undefined || extra !== undefined) return false
    const expected = this.#mac(kid, `refresh\0${handle}`)
    return expected !== undefined && equal(expected, mac)
  }
}
