import { isRecord } from '../../core/is-record.ts'

/**
 * Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): an OAuth client
 * names itself by an https URL, and the document at that URL is its registration. What a URL and a
 * document must be before authgate registers a client for them at Supabase Auth.
 */

/** Why a string is not a client ID URL, or undefined when it is one. */
export function clientIdUrlProblem(value: string): string | undefined {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'not a URL'
  }
  if (url.protocol !== 'https:') return 'not an https URL'
  if (url.username !== '' || url.password !== '') return 'it carries a user name or password'
  if (value.includes('#')) return 'it carries a fragment'
  if (url.pathname === '/' || url.pathname === '') return 'it has no path'
  // URL parsing resolves dot segments away: the text as sent is what must not have them.
  const path = value.slice(value.indexOf('//') + 2).replace(/[?#].*$/, '')
  if (path.split('/').some((s) => s === '.' || s === '..' || /^(%2e|\.){1,2}$/i.test(s)))
    return 'its path has a dot segment'
  // Compared with the document's `client_id` by simple string comparison: it must be what URL writes.
  if (url.href !== value) return `it is not written as a URL is normalised (${url.href})`
  return undefined
}

/** Whether a `client_id` is meant as a metadata document's URL (anything with the https scheme). */
export const isClientIdUrl = (clientId: string): boolean => /^https:\/\//i.test(clientId)

/** A validated document: what authgate keeps and registers. */
export interface ClientDocument {
  clientId: string
  clientName: string | undefined
  redirectUris: string[]
}

/** The token endpoint methods of a document authgate can serve: a public client (PKCE alone). */
const SECRET_METHODS = new Set(['client_secret_basic', 'client_secret_post', 'client_secret_jwt'])

/** The document's fields as the draft and Supabase Auth's OAuth server allow them, or why not. */
export function validateClientDocument(
  url: string,
  body: unknown,
): { ok: true; document: ClientDocument } | { ok: false; reason: string } {
  if (!isRecord(body)) return { ok: false, reason: 'the document is not a JSON object' }
  if (body.client_id !== url) return { ok: false, reason: "the document's client_id is not its own URL" }
  if ('client_secret' in body || 'client_secret_expires_at' in body)
    return { ok: false, reason: 'the document carries a client secret' }
  const method = body.token_endpoint_auth_method ?? 'none'
  if (typeof method !== 'string' || SECRET_METHODS.has(method))
    return { ok: false, reason: `token_endpoint_auth_method ${JSON.stringify(method)} relies on a shared secret` }
  if (method !== 'none')
    return { ok: false, reason: `token_endpoint_auth_method ${JSON.stringify(method)} is not supported (only none)` }
  const uris = body.redirect_uris
  if (!Array.isArray(uris) || uris.length === 0 || !uris.every((u) => typeof u === 'string' && u !== ''))
    return { ok: false, reason: 'redirect_uris must be a non-empty list of strings' }
  if (uris.length > 10) return { ok: false, reason: 'redirect_uris may hold at most 10 URIs' }
  for (const name of ['grant_types', 'response_types'] as const) {
    const allowed = name === 'grant_types' ? ['authorization_code', 'refresh_token'] : ['code']
    const value = body[name]
    if (value === undefined) continue
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && allowed.includes(v)))
      return { ok: false, reason: `${name} may only hold ${allowed.join(', ')}` }
  }
  const name = body.client_name
  if (name !== undefined && (typeof name !== 'string' || name.length > 1024))
    return { ok: false, reason: 'client_name must be a string of at most 1024 characters' }
  return {
    ok: true,
    document: { clientId: url, clientName: name || undefined, redirectUris: uris as string[] },
  }
}
