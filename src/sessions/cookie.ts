import { SESSION_ID } from './crypto.ts'

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

/** The name of one `name=value` pair of a `Cookie` header (the whole pair when it has no `=`). */
function pairName(pair: string): string {
  const eq = pair.indexOf('=')
  return (eq < 0 ? pair : pair.slice(0, eq)).trim()
}

/**
 * A `Cookie` value without the cookies named `name`, the others as they were written; undefined
 * when none is left. A name that merely starts the same (`name_x=`) is another cookie.
 */
export function withoutCookie(value: string, name: string): string | undefined {
  if (!value.includes(name)) return value
  const rest = value
    .split(';')
    .filter((pair) => pairName(pair) !== name)
    .join(';')
    .trim()
  return rest === '' ? undefined : rest
}

/**
 * The session id from a `Cookie` header, or undefined when there is none or it does not have the
 * shape of one (anything else is not looked up).
 */
export function sessionIdFrom(header: string | undefined, name: string): string | undefined {
  if (header === undefined || header === '') return undefined
  let found: string | undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0 || pairName(part) !== name) continue
    // Two cookies of the name (one set by a sibling subdomain for a non-__Host- name): neither is trusted.
    if (found !== undefined) return undefined
    found = part.slice(eq + 1).trim()
  }
  return found !== undefined && SESSION_ID.test(found) ? found : undefined
}
