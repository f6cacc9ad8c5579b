import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { RateLimitPolicy } from './policy.ts'

/** The cookie's name: one per browser, for the account that last signed in there. */
export const DEVICE_COOKIE = 'authgate-device'

/** How long a device stays known without signing in again (180 days). */
const MAX_AGE_SECONDS = 180 * 24 * 3600

export interface DeviceCookies {
  /**
   * The device's own bucket id when `cookieHeader` holds a device cookie that authgate issued for
   * this account (its MAC checks, its account tag is the identifier's); undefined otherwise.
   */
  deviceOf(cookieHeader: string | undefined, identifier: string): string | undefined
  /** The `Set-Cookie` value for a device that just signed in to the account. */
  issue(identifier: string, path: string, secure: boolean): string
}

const mac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest('base64url').slice(0, 22)

/**
 * Device cookies against targeted lock-out (OWASP, "Slow Down Online Guessing Attacks with Device
 * Cookies"): a browser that signed in to an account gets `<account tag>.<nonce>.<mac>`, where the
 * tag is a keyed HMAC of the account (no address or number in clear), the nonce names the device,
 * and the MAC, keyed by a key derived from the account-key secret, makes the cookie unforgeable.
 * A device presenting it is limited in a bucket of its own, so strangers' failures cannot lock it
 * out, and its own failures count against it alone.
 */
export function deviceCookies(secret: string): DeviceCookies {
  // A key of its own, so a cookie's MAC is never an account key.
  const key = createHmac('sha256', secret).update('authgate device cookie v1').digest()
  const tagOf = (identifier: string) => mac(key, 'account|' + identifier)
  return {
    deviceOf(cookieHeader, identifier) {
      if (cookieHeader === undefined || !cookieHeader.includes(DEVICE_COOKIE)) return undefined
      const tag = tagOf(identifier)
      for (const part of cookieHeader.split(';')) {
        const eq = part.indexOf('=')
        if (eq < 0 || part.slice(0, eq).trim() !== DEVICE_COOKIE) continue
        const [cookieTag, nonce, given, ...rest] = part
          .slice(eq + 1)
          .trim()
          .split('.')
        if (rest.length > 0 || cookieTag !== tag || nonce === undefined || given === undefined) continue
        const expected = Buffer.from(mac(key, `${cookieTag}.${nonce}`))
        const actual = Buffer.from(given)
        if (actual.length === expected.length && timingSafeEqual(actual, expected)) return `${cookieTag}.${nonce}`
      }
      return undefined
    },
    issue(identifier, path, secure) {
      const tag = tagOf(identifier)
      const nonce = randomBytes(16).toString('base64url')
      const value = `${tag}.${nonce}.${mac(key, `${tag}.${nonce}`)}`
      return `${DEVICE_COOKIE}=${value}; Path=${path}; Max-Age=${MAX_AGE_SECONDS}; HttpOnly${secure ? '; Secure' : ''}; SameSite=Lax`
    },
  }
}

/** A known device's own budget: half the account's, in the same window (10/15m → 5/15m). */
export function devicePolicy(account: RateLimitPolicy): RateLimitPolicy {
  return {
    name: 'account-device',
    limit: Math.max(1, Math.floor(account.limit / 2)),
    windowMs: account.windowMs,
    burst: Math.max(1, Math.floor(account.burst / 2)),
  }
}
