import { onlyCookie } from '../core/cookie-pairs.ts'
import { SESSION_ID } from './crypto.ts'

export { withoutCookie } from '../core/cookie-pairs.ts'

export interface CookieSettings {
  name: string
  secure: boolean
}

/**
 * The `Set-Cookie` value of a session: HttpOnly (no script reads it), SameSite=Lax (not sent on
 * cross-site subrequests and posts), Path=/ and no Domain (a `__Host-` cookie must have both).
 */
export function sessionCookie(settings: CookieSettings, id: string, maxAgeSeconds: number): string {
  const secure = settings.secure ? '; Secure' : ''
  return `${settings.name}=${id}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly${secure}; SameSite=Lax`
}

/** The `Set-Cookie` value that removes the session cookie. */
export function clearedCookie(settings: CookieSettings): string {
  return sessionCookie(settings, '', 0)
}

/**
 * The session id from a `Cookie` header, or undefined when there is none, two, or it does not have
 * the shape of one (anything else is not looked up).
 */
export function sessionIdFrom(header: string | undefined, name: string): string | undefined {
  const found = onlyCookie(header, name)
  return found !== undefined && SESSION_ID.test(found) ? found : undefined
}
