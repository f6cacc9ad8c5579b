/**
 * Query parameters whose values are secrets: one-time tokens and codes, passwords, PKCE verifiers,
 * client secrets, refresh and access tokens, API keys. Matched by exact name or by a part of it, so
 * `provider_refresh_token` or `client_secret` are caught without listing every variant.
 */
const SECRET_NAMES = new Set(['code', 'state', 'key', 'otp', 'nonce', 'ticket', 'sig', 'signature', 'assertion'])
const SECRET_PARTS = /token|secret|password|passwd|verifier|apikey|api_key|jwt|credential|session/i

export const REDACTED = '[redacted]'

export function isSecretParameter(name: string): boolean {
  return SECRET_NAMES.has(name.toLowerCase()) || SECRET_PARTS.test(name)
}

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '))
  } catch {
    return raw
  }
}

/**
 * The query string with every secret value replaced, everything else kept byte for byte
 * (`grant_type=password&refresh_token=…` → `grant_type=password&refresh_token=[redacted]`).
 * A parameter without `=` is kept as it is: it has no value.
 */
export function redactQuery(query: string): string {
  if (query === '') return ''
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      if (eq === -1) return pair
      return isSecretParameter(decodedName(pair.slice(0, eq))) ? `${pair.slice(0, eq)}=${REDACTED}` : pair
    })
    .join('&')
}

/** A request target for logs: the path and the query with secrets redacted. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : `${url.slice(0, q)}?${redactQuery(url.slice(q + 1))}`
}
