/** The fields of a Supabase Auth session answer that never reach the page in cookie mode. */
export const TOKEN_FIELDS = ['access_token', 'refresh_token', 'provider_token', 'provider_refresh_token'] as const

/** What authgate keeps of a session answer. */
export interface SessionTokens {
  accessToken: string
  refreshToken: string
  /** Expiry of the access token, Unix seconds. */
  expiresAt: number
  user: unknown
}

/**
 * Splits a session answer (a JSON object with both tokens) into the tokens to keep and the body
 * the page gets: the same object without the tokens. Undefined for any other answer (a message,
 * the unconfirmed user of a sign-up), which is relayed as it is.
 */
export function splitSessionAnswer(
  body: Buffer,
  now = Date.now(),
): { tokens: SessionTokens; page: Record<string, unknown> } | undefined {
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined
  const answer = parsed as Record<string, unknown>
  const { access_token: accessToken, refresh_token: refreshToken } = answer
  if (typeof accessToken !== 'string' || typeof refreshToken !== 'string' || accessToken === '' || refreshToken === '')
    return undefined
  const tokens: SessionTokens = {
    accessToken,
    refreshToken,
    expiresAt: expiryOf(answer, now),
    user: answer.user ?? null,
  }
  const page: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(answer)) if (!(TOKEN_FIELDS as readonly string[]).includes(k)) page[k] = v
  return { tokens, page }
}

/** `expires_at`, else now + `expires_in`, else the token's own `exp`; Unix seconds. */
function expiryOf(answer: Record<string, unknown>, now: number): number {
  if (typeof answer.expires_at === 'number') return answer.expires_at
  if (typeof answer.expires_in === 'number') return Math.floor(now / 1000) + answer.expires_in
  const payload = String(answer.access_token).split('.')[1]
  try {
    const exp = (JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8')) as { exp?: unknown }).exp
    if (typeof exp === 'number') return exp
  } catch {
    // fall through
  }
  // Unknown: treated as expired, so the first use refreshes it.
  return Math.floor(now / 1000)
}

/**
 * A redirect that carries a session in its fragment (`GET /verify` of an e-mail link:
 * `#access_token=…&refresh_token=…&expires_at=…`): the tokens to keep and the location without
 * them. Undefined when the location has no session.
 */
export function splitSessionRedirect(
  location: string,
  now = Date.now(),
): { tokens: SessionTokens; location: string } | undefined {
  const hash = location.indexOf('#')
  if (hash === -1) return undefined
  const params = new URLSearchParams(location.slice(hash + 1))
  const accessToken = params.get('access_token')
  const refreshToken = params.get('refresh_token')
  if (!accessToken || !refreshToken) return undefined
  const answer: Record<string, unknown> = { access_token: accessToken }
  const expiresAt = Number(params.get('expires_at'))
  const expiresIn = Number(params.get('expires_in'))
  if (Number.isFinite(expiresAt) && expiresAt > 0) answer.expires_at = expiresAt
  else if (Number.isFinite(expiresIn) && expiresIn > 0) answer.expires_in = expiresIn
  for (const field of TOKEN_FIELDS) params.delete(field)
  const rest = params.toString()
  return {
    tokens: { accessToken, refreshToken, expiresAt: expiryOf(answer, now), user: null },
    location: location.slice(0, hash) + (rest === '' ? '' : `#${rest}`),
  }
}
