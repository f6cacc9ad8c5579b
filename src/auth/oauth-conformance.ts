import type { FastifyRequest } from 'fastify'
import type { BackendFetch } from '../core/backend.ts'
import { heldHeader, heldJson, type HeldAnswer } from '../core/held-answer.ts'
import { backendUrlQuery } from '../core/go-values.ts'

// The OAuth 2.1 server's answers where Supabase Auth departs from what OAuth clients (the MCP
// SDK among them) act on: the issuer of an authorization response (RFC 9207) and the error shape
// of the token endpoint (RFC 6749 §5.2). Each is a route's mend (src/auth/routes/entry.ts): the
// answer is held whole, changed where it departs, and relayed byte for byte otherwise.

/** The headers with `name` set to `value`: in the place of the first one, others of that name dropped. */
export function withHeader(headers: readonly string[], name: string, value: string): string[] {
  const out: string[] = []
  let placed = false
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() !== name) out.push(headers[i]!, headers[i + 1]!)
    else if (!placed) {
      out.push(headers[i]!, value)
      placed = true
    }
  }
  if (!placed) out.push(name, value)
  return out
}

/** What the issuer lookup needs of the connection to Supabase Auth. */
export interface IssuerBackend {
  resolve(path: string): URL
  fetch: BackendFetch
}

/** How long the issuer read from the backend's metadata is used before it is read again. */
export const ISSUER_TTL_MS = 10 * 60_000

interface KnownIssuer {
  issuer: string | undefined
  until: number
  pending: Promise<string | undefined> | undefined
}
const issuers = new WeakMap<IssuerBackend, KnownIssuer>()

/** Records the issuer of a metadata answer that passed through (it is what clients compare `iss` with). */
export function rememberIssuer(backend: IssuerBackend, issuer: string): void {
  issuers.set(backend, { issuer, until: Date.now() + ISSUER_TTL_MS, pending: undefined })
}

/**
 * Supabase Auth's issuer identifier, as its RFC 8414 metadata states it (`GOTRUE_JWT_ISSUER`):
 * read once per ISSUER_TTL_MS, concurrent lookups shared; undefined when the metadata cannot be had.
 */
export async function backendIssuer(backend: IssuerBackend): Promise<string | undefined> {
  const known = issuers.get(backend)
  if (known !== undefined && known.issuer !== undefined && Date.now() < known.until) return known.issuer
  if (known?.pending !== undefined) return known.pending
  const pending = (async () => {
    try {
      const response = await backend.fetch(backend.resolve('/.well-known/oauth-authorization-server'), {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(5000),
      })
      if (response.status !== 200) {
        await response.body?.cancel()
        return undefined
      }
      const body = (await response.json()) as { issuer?: unknown }
      return typeof body.issuer === 'string' && body.issuer !== '' ? body.issuer : undefined
    } catch {
      return undefined
    }
  })()
  issuers.set(backend, { issuer: known?.issuer, until: known?.until ?? 0, pending })
  const issuer = await pending
  if (issuer !== undefined) rememberIssuer(backend, issuer)
  else issuers.set(backend, { issuer: known?.issuer, until: known?.until ?? 0, pending: undefined })
  return issuer ?? known?.issuer
}

const backendOf = (request: FastifyRequest): IssuerBackend => request.server.authgate.backend

/**
 * RFC 9207 §3: the metadata says that authorization responses carry `iss`. Appended before the
 * closing brace, so the backend's own bytes are kept; the issuer it names is remembered.
 */
export function advertiseIssParameter(answer: HeldAnswer, request: FastifyRequest): HeldAnswer {
  if (answer.status !== 200) return answer
  const body = heldJson(answer)
  if (body === undefined || typeof body.issuer !== 'string') return answer
  rememberIssuer(backendOf(request), body.issuer)
  if ('authorization_response_iss_parameter_supported' in body) return answer
  const text = answer.body.toString('utf8').trimEnd()
  const mended = `${text.slice(0, -1)},"authorization_response_iss_parameter_supported":true}`
  return { ...answer, body: Buffer.from(mended, 'utf8') }
}

/**
 * The URL with `iss` added when it is an authorization response (it carries `code` or `error`)
 * without one; undefined when it is something else (the consent page's address).
 */
export function withIssuer(location: string, issuer: string): string | undefined {
  if (!URL.canParse(location)) return undefined
  // Read as Supabase Auth, which wrote the location, reads a query (a pair holding `;` is not its `code`).
  const q = backendUrlQuery(location)
  if ((!('code' in q) && !('error' in q)) || 'iss' in q) return undefined
  // Appended to the query as it came (not re-serialised): the client reads its own parameters back.
  const hash = location.indexOf('#')
  const head = hash === -1 ? location : location.slice(0, hash)
  const tail = hash === -1 ? '' : location.slice(hash)
  const sep = head.includes('?') ? (head.endsWith('?') || head.endsWith('&') ? '' : '&') : '?'
  return `${head}${sep}iss=${encodeURIComponent(issuer)}${tail}`
}

/**
 * RFC 9207: `GET /oauth/authorize` sends the browser back to the client with `code` or `error`
 * (a 302) when it refuses the request or consent was given before; the redirect gets `iss`. The
 * redirect to the consent page is left as it is.
 */
export async function issOnAuthorizationRedirect(answer: HeldAnswer, request: FastifyRequest): Promise<HeldAnswer> {
  if (answer.status < 300 || answer.status > 399) return answer
  const location = heldHeader(answer, 'location')
  if (location === undefined || withIssuer(location, 'x') === undefined) return answer
  const issuer = await backendIssuer(backendOf(request))
  if (issuer === undefined) {
    request.log.warn('oauth: the issuer could not be read from the metadata; the redirect goes without iss')
    return answer
  }
  return { ...answer, headers: withHeader(answer.headers, 'location', withIssuer(location, issuer)!) }
}

/**
 * RFC 9207 for the consent API: the `redirect_url` the consent page sends the browser to (after
 * approval, denial, or an earlier consent) is an authorization response, and gets `iss`.
 */
export async function issOnConsentRedirect(answer: HeldAnswer, request: FastifyRequest): Promise<HeldAnswer> {
  if (answer.status !== 200) return answer
  const body = heldJson(answer)
  if (body === undefined || typeof body.redirect_url !== 'string') return answer
  if (withIssuer(body.redirect_url, 'x') === undefined) return answer
  const issuer = await backendIssuer(backendOf(request))
  if (issuer === undefined) {
    request.log.warn('oauth: the issuer could not be read from the metadata; the redirect goes without iss')
    return answer
  }
  const mended = JSON.stringify({ ...body, redirect_url: withIssuer(body.redirect_url, issuer) })
  return { ...answer, body: Buffer.from(mended, 'utf8') }
}

/**
 * Supabase Auth's own refusal codes at `POST /oauth/token`, as the RFC 6749 §5.2 errors clients
 * act on: `invalid_grant` makes a client drop its refresh token and authorize again,
 * `invalid_client` makes it drop its registration.
 */
export const TOKEN_ERRORS: Readonly<Record<string, 'invalid_grant' | 'invalid_client' | 'invalid_request'>> = {
  // The refresh token: unknown, spent (reuse), revoked with its session, or its user is gone.
  refresh_token_not_found: 'invalid_grant',
  refresh_token_already_used: 'invalid_grant',
  session_not_found: 'invalid_grant',
  session_expired: 'invalid_grant',
  user_banned: 'invalid_grant',
  user_not_found: 'invalid_grant',
  // Client authentication: an unknown id, a wrong secret, a malformed id, the wrong method.
  invalid_credentials: 'invalid_client',
  validation_failed: 'invalid_request',
  bad_json: 'invalid_request',
}

/**
 * RFC 6749 §5.2: the token endpoint's refusals are `{"error", "error_description"}`. Supabase Auth
 * answers some in its own shape (`{code, error_code, msg}` or, with a newer API version,
 * `{code, message}`); those become the error of the list above, with its message as the
 * description. A refused client that authenticated in the `Authorization` header gets 401 and a
 * `WWW-Authenticate: Basic` challenge, as §5.2 requires; every other status is Supabase Auth's.
 */
export function oauthTokenError(answer: HeldAnswer, request: FastifyRequest): HeldAnswer {
  if (answer.status !== 400 && answer.status !== 401 && answer.status !== 403) return answer
  const body = heldJson(answer)
  if (body === undefined || typeof body.error === 'string') return answer
  const code =
    typeof body.error_code === 'string' ? body.error_code : typeof body.code === 'string' ? body.code : undefined
  const error = code === undefined ? undefined : TOKEN_ERRORS[code]
  if (error === undefined) return answer
  const description = typeof body.msg === 'string' ? body.msg : typeof body.message === 'string' ? body.message : ''
  let status = answer.status === 403 ? 400 : answer.status
  let headers = withHeader(answer.headers, 'content-type', 'application/json; charset=utf-8')
  if (error === 'invalid_client' && /^basic /i.test(request.headers.authorization ?? '')) {
    status = 401
    headers = withHeader(headers, 'www-authenticate', 'Basic realm="oauth", charset="UTF-8"')
  }
  const mended = JSON.stringify(description ? { error, error_description: description } : { error })
  return { status, headers, body: Buffer.from(mended, 'utf8') }
}
