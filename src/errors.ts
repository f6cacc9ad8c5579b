import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'

/**
 * Every error the gateway itself can produce: one entry each, never reused for another meaning
 * (the habit of Fastify's FST_ERR_* and undici's UND_ERR_*). Codes are Supabase Auth's own where
 * one exists, so supabase-js treats the gateway's errors like the backend's.
 */
export const ERRORS = {
  validation_failed: { status: 400, message: 'Request does not match the expected schema' },
  weak_password: { status: 422, message: 'Password should be at least 6 characters.' },
  bad_json: { status: 400, message: 'Could not parse request body as JSON' },
  unsupported_media_type: { status: 415, message: 'Unsupported Content-Type' },
  request_entity_too_large: { status: 413, message: 'Request body is too large' },
  not_found: { status: 404, message: 'No route matches this request' },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this path' },
  over_request_rate_limit: { status: 429, message: 'Request rate limit reached' },
  // Supabase Auth's codes for its e-mail and SMS budgets: authgate's budgets answer first (docs/rate-limiting.md).
  over_email_send_rate_limit: { status: 429, message: 'Email rate limit exceeded' },
  over_sms_send_rate_limit: { status: 429, message: 'SMS rate limit exceeded' },
  no_authorization: { status: 401, message: 'This endpoint requires a valid Bearer token' },
  bad_authorization_header: { status: 400, message: 'The Authorization header must be "Bearer <access token>"' },
  bad_jwt: { status: 401, message: 'The access token is invalid or has expired' },
  session_not_found: { status: 401, message: 'The session of this access token has ended' },
  // 401, not 403: RFC 9470 pairs insufficient_user_authentication with 401 (docs/decisions.md).
  insufficient_aal: { status: 401, message: 'This endpoint requires a higher authentication assurance level (MFA)' },
  insufficient_role: { status: 403, message: "The access token's role may not perform this operation" },
  insufficient_scope: { status: 403, message: 'The access token lacks a scope this operation requires' },
  client_not_allowed: { status: 403, message: 'This operation does not accept tokens issued to this OAuth client' },
  // Cookie sessions (src/sessions/).
  no_session: { status: 401, message: 'No signed-in session: the session cookie is absent or the session has ended' },
  cross_site_request: {
    status: 403,
    message: 'A request authenticated by the session cookie must come from an allowed origin',
  },
  // The route would trade the cookie for tokens the page could read (docs/sessions.md).
  session_cookie_refused: {
    status: 403,
    message: 'This route does not take the session cookie here: it would lead to tokens the page could read',
  },
  // A refresh stand-in (docs/sessions.md) without its session: Supabase Auth's words for an unknown refresh token.
  refresh_token_not_found: { status: 400, message: 'Invalid Refresh Token: Refresh Token Not Found' },
  // The Supabase services beside Auth (src/services/): the key rules of Supabase's own gateway.
  no_api_key: { status: 401, message: 'No API key found in request' },
  invalid_api_key: { status: 401, message: 'Invalid API key' },
  service_key_required: { status: 403, message: 'This service needs the service-role or a secret key' },
  session_store_unavailable: { status: 503, message: 'The session store could not be reached' },
  client_metadata_unavailable: {
    status: 503,
    message: "The store of client ID metadata documents' clients could not be reached",
  },
  backend_unreachable: { status: 502, message: 'The authentication backend could not be reached' },
  // An answer authgate must read (a session answer, a mended one) in a coding it cannot undo.
  backend_unreadable: { status: 502, message: 'The answer of the authentication backend could not be read' },
  request_timeout: { status: 504, message: 'The authentication backend did not answer in time' },
  unexpected_failure: { status: 500, message: 'Unexpected failure' },
  // Answered on the connection itself, before or instead of routing (src/http/client-errors.ts).
  client_timeout: { status: 408, message: 'The request was not received in time' },
  request_header_too_large: { status: 431, message: 'Request header fields are too large' },
  malformed_request: { status: 400, message: 'Malformed HTTP request' },
  // RFC 6749 §5.2 errors of the OAuth token endpoint, answered in that shape as Supabase Auth does.
  invalid_request: { status: 400, message: 'The request is missing a required parameter', shape: 'oauth' },
  unsupported_grant_type: { status: 400, message: 'The grant type is not supported', shape: 'oauth' },
  invalid_client: { status: 400, message: 'Client authentication failed', shape: 'oauth' },
} as const satisfies Record<string, { status: number; message: string; shape?: 'oauth' }>

export type ErrorCode = keyof typeof ERRORS

/** True for the codes answered in RFC 6749 §5.2's shape, `{error, error_description}`. */
export function isOAuthShaped(code: ErrorCode): boolean {
  return 'shape' in ERRORS[code]
}

/** The first Supabase API version whose error body is `{code, message}` (older clients get the legacy shape). */
export const API_VERSION_2024 = '2024-01-01'
const DATE = /^\d{4}-\d{2}-\d{2}$/

/** True when the client asked for the 2024-01-01 error shape (any valid date >= 2024-01-01). */
export function wantsNewErrorShape(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined) return false
  const v = value.trim()
  if (!DATE.test(v)) return false
  const t = Date.parse(v + 'T00:00:00Z')
  return Number.isFinite(t) && v >= API_VERSION_2024
}

export interface ErrorBody {
  legacy: { code: number; error_code: ErrorCode; msg: string; [field: string]: unknown }
  current: { code: ErrorCode; message: string; [field: string]: unknown }
}

/**
 * One of the gateway's own answers, as data: the code, and where it differs from the code's
 * usual one, the status (Supabase Auth answers `validation_failed` with 422 in places), the
 * message, extra body fields (`weak_password`) and extra headers (`WWW-Authenticate`, `Retry-After`).
 */
export interface ErrorSpec {
  code: ErrorCode
  status?: number
  message?: string
  fields?: Record<string, unknown>
  headers?: Record<string, string>
  /** false: no `x-sb-error-code` with the 2024-01-01 shape (Supabase Auth's weak-password body). */
  codeHeaderInNewShape?: false
}

/** An answer in Supabase Auth's words (src/auth/backend-answers.ts): its status and message are always given. */
export type BackendAnswer = ErrorSpec & { status: number; message: string }

/**
 * The one error type of the gateway's request path: thrown (or passed to `sendError`) and rendered
 * by `errorResponse`, so every refusal carries the same body shape and headers.
 */
export class AuthgateError extends Error implements ErrorSpec {
  readonly code: ErrorCode
  readonly status: number
  readonly fields: Record<string, unknown> | undefined
  readonly headers: Record<string, string> | undefined
  constructor(
    code: ErrorCode,
    message?: string,
    options: Omit<ErrorSpec, 'code' | 'message'> & { cause?: unknown } = {},
  ) {
    super(message ?? ERRORS[code].message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'AuthgateError'
    this.code = code
    this.status = options.status ?? ERRORS[code].status
    this.fields = options.fields
    this.headers = options.headers
  }
}

/** Builds the body in the shape the request negotiated (docs/decisions.md, D7). */
export function errorBody(
  code: ErrorCode,
  newShape: boolean,
  message?: string,
  extra?: { status?: number; fields?: Record<string, unknown> },
): ErrorBody['legacy'] | ErrorBody['current'] {
  const msg = message ?? ERRORS[code].message
  const fields = extra?.fields ?? {}
  return newShape
    ? { code, message: msg, ...fields }
    : { code: extra?.status ?? ERRORS[code].status, error_code: code, msg, ...fields }
}

/** The media type of the gateway's own answers: Supabase Auth's, without parameters. */
export const JSON_CONTENT_TYPE = 'application/json'

export interface ErrorResponse {
  status: number
  /** Lower-case names; the configured request-id header is the caller's to add. */
  headers: Record<string, string>
  body: string
}

/**
/**
 * The whole answer for one error, in the shape the request negotiated: status, JSON body,
 * `x-sb-error-code` and the echoed `X-Supabase-Api-Version` as Supabase Auth sends them (supabase-js
 * only reads `code` as the error code when the version header is present), its JSON type without
 * parameters and `Vary: Origin` (its CORS layer adds that to every answer). Replies, the rate
 * limiter's prebuilt 429 and the raw-socket writer all render through here.
 */
export function errorResponse(error: ErrorCode | ErrorSpec, newShape: boolean): ErrorResponse {
  const spec: ErrorSpec = typeof error === 'string' ? { code: error } : error
  const status = spec.status ?? ERRORS[spec.code].status
  const headers: Record<string, string> = { 'content-type': JSON_CONTENT_TYPE, vary: 'Origin' }
  if (isOAuthShaped(spec.code)) {
    // The same in both API versions, with no `x-sb-error-code`, as Supabase Auth's OAuth answers.
    if (spec.headers) for (const [k, v] of Object.entries(spec.headers)) headers[k.toLowerCase()] = v
    const body = JSON.stringify({ error: spec.code, error_description: spec.message ?? ERRORS[spec.code].message })
    return { status, headers, body }
  }
  if (!newShape || spec.codeHeaderInNewShape !== false) headers['x-sb-error-code'] = spec.code
  if (newShape) headers['x-supabase-api-version'] = API_VERSION_2024
  if (spec.headers) for (const [k, v] of Object.entries(spec.headers)) headers[k.toLowerCase()] = v
  const extra = { status, ...(spec.fields ? { fields: spec.fields } : {}) }
  const body = JSON.stringify(errorBody(spec.code, newShape, spec.message, extra))
  return { status, headers, body }
}

/** Adds `Origin` to `Vary` unless it is there (authgate's CORS layer may have added it). */
export function varyOrigin(reply: FastifyReply): void {
  const current = reply.getHeader('vary')
  if (current === undefined) {
    reply.header('vary', 'Origin')
    return
  }
  const names = String(current)
    .split(',')
    .map((n) => n.trim().toLowerCase())
  if (!names.includes('origin') && !names.includes('*')) reply.header('vary', `${String(current)}, Origin`)
}

/**
 * Sends one of the gateway's own errors: a code (with an optional message and headers) or a whole
 * `ErrorSpec` / `AuthgateError`.
 */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: ErrorCode | ErrorSpec,
  message?: string,
  headers?: Record<string, string>,
): FastifyReply {
  const spec: ErrorSpec =
    typeof error === 'string'
      ? { code: error, ...(message !== undefined ? { message } : {}), ...(headers ? { headers } : {}) }
      : error
  const answer = errorResponse(spec, wantsNewErrorShape(request.headers['x-supabase-api-version']))
  const { vary: _vary, ...rest } = answer.headers
  reply.code(answer.status).headers(rest)
  varyOrigin(reply)
  // A Buffer: Fastify would add `; charset=utf-8` to the type of a string body.
  return reply.send(Buffer.from(answer.body))
}

/** JSON Schema of both error shapes, for the OpenAPI document. */
export const ErrorSchema = {
  $id: 'ErrorResponse',
  title: 'ErrorResponse',
  description:
    "Supabase Auth's error body. Without `X-Supabase-Api-Version` >= 2024-01-01: `{code: <status>, error_code, msg}`; with it: `{code: <error code>, message}`.",
  type: 'object',
  properties: {
    code: {
      description: 'HTTP status (legacy shape) or the error code (2024-01-01 shape)',
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      examples: ['validation_failed'],
    },
    error_code: { type: 'string', description: 'Error code (legacy shape)', examples: ['validation_failed'] },
    msg: {
      type: 'string',
      description: 'Human-readable message (legacy shape)',
      examples: ['Password should be at least 6 characters'],
    },
    message: {
      type: 'string',
      description: 'Human-readable message (2024-01-01 shape)',
      examples: ['Password should be at least 6 characters'],
    },
  },
  required: ['code'],
  additionalProperties: true,
} as const

/** Fastify's own errors (body reading, content type, validation, bad URLs) as the gateway's codes. */
export function codeForFastifyError(err: FastifyError): ErrorCode {
  if (err.validation) return 'validation_failed'
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request_entity_too_large'
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported_media_type'
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'bad_json'
  }
  if (err instanceof SyntaxError) return 'bad_json'
  const status = err.statusCode ?? 500
  if (status === 413) return 'request_entity_too_large'
  if (status === 415) return 'unsupported_media_type'
  if (status === 404) return 'not_found'
  if (status === 429) return 'over_request_rate_limit'
  if (status >= 400 && status < 500) return 'validation_failed'
  return 'unexpected_failure'
}
