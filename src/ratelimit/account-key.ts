import { createHmac, randomBytes } from 'node:crypto'
import { isRecord } from '../core/is-record.ts'

/**
 * Lower case as Go's `strings.ToLower` writes it (Supabase Auth looks addresses up that way): each
 * character's own lower case. JavaScript's `toLowerCase` applies the whole-string rules besides
 * (`İ` becomes `i` and a combining dot, a final `Σ` becomes `ς`), so `vİctim@…` and `ΑΣ@…` would be
 * other keys than the accounts Supabase Auth signs them in to.
 */
export function goLower(text: string): string {
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(text)) return text.toLowerCase()
  let out = ''
  for (const ch of text) out += ch === '\u0130' ? 'i' : ch.toLowerCase()
  return out
}

/**
 * The account a request is about, as Supabase Auth will read it from the validated body: the
 * e-mail (trimmed, lower-cased: Supabase Auth keeps addresses that way) or the phone in E.164
 * (Supabase Auth drops a leading `+` and spaces; dashes, dots and brackets are dropped here too,
 * so `+1 (555) 000-0001` and `15550000001` are one account). Undefined when the body names none
 * (an anonymous sign-in, a refresh-token grant).
 */
export function accountIdentifier(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined
  if (typeof body.email === 'string' && body.email.trim() !== '') return 'e:' + goLower(body.email.trim())
  if (typeof body.phone === 'string') {
    const digits = body.phone.replace(/[\s().-]/g, '').replace(/^\+/, '')
    if (digits !== '') return 'p:+' + digits
  }
  return undefined
}

/**
 * The account a route's per-account limit counts a request against: the body's account, except on
 * `POST /token`, whose grants other than `password` (a refresh token, a PKCE code, an ID token)
 * name no account to guess a password for.
 */
export function limitedAccount(route: string, grantType: unknown, body: unknown): string | undefined {
  return route === 'POST /token' && grantType !== 'password' ? undefined : accountIdentifier(body)
}

/** Which channel a message-sending request would use: the phone's, or e-mail. */
export function messageChannel(body: unknown): 'email' | 'sms' | undefined {
  const id = accountIdentifier(body)
  if (id === undefined) return undefined
  return id.startsWith('p:') ? 'sms' : 'email'
}

/**
 * The account's rate-limit key: an HMAC of the identifier with the deployment's secret, so the
 * store (Redis, a dump of it, a log of its keys) never holds an address or a number, and nobody
 * without the secret can test a guess against a key. 128 bits, base64url.
 */
export function accountKeyer(secret: string): (identifier: string) => string {
  return (identifier) => createHmac('sha256', secret).update(identifier).digest('base64url').slice(0, 22)
}

/** A secret for one process, when the deployment gives none (limits are then per process). */
export function randomAccountSecret(): string {
  return randomBytes(32).toString('base64url')
}
