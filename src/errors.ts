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
  no_authorization: { status: 401, message: 'This endpoint requires a valid Bearer token' },
  bad_jwt: { status: 401, message: 'The access token is invalid or has expired' },
  session_not_found: { status: 401, message: 'The session of this access token has ended' },
  insufficient_aal: { status: 403, message: 'This endpoint requires a higher authentication assurance level (MFA)' },
  insufficient_role: { status: 403, message: "The access token's role may not perform this operation" },
  insufficient_scope: { status: 403, message: 'The access token lacks a scope this operation requires' },
  backend_unreachable: { status: 502, message: 'The authentication backend could not be reached' },
  request_timeout: { status: 504, message: 'The authentication backend did not answer in time' },
  unexpected_failure: { status: 500, message: 'Unexpected failure' },
  // Answered on the connection itself, before or instead of routing (src/http/client-errors.ts).
  client_timeout: { status: 408, message: 'The request was not received in time' },
  request_header_too_large: { status: 431, message: 'Request header fields are too large' },
  malformed_request: { status: 400, message: 'Malformed HTTP request' },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof ERRORS

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

/**
 * An answer the gateway gives in Supabase Auth's words (src/auth/backend-answers.ts): its status
 * (which may differ from the code's usual one, e.g. `validation_failed` with 422), its message and
 * any extra fields (`weak_password`), in both body shapes.
 */
export interface BackendAnswer {
  code: ErrorCode
  status: number
  message: string
  fields?: Record<string, unknown>
  /** false: no `x-sb-error-code` with the 2024-01-01 shape (Supabase Auth's weak-password body). */
  codeHeaderInNewShape?: false
}

/**
 * The headers of every error answer of the gateway, as Supabase Auth sends them on its own: its JSON
 * type without parameters, and `Vary: Origin` (its CORS layer adds it to every answer).
 */
export const ERROR_CONTENT_TYPE = 'application/json'

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
 * Sends one of the gateway's own errors. Mirrors the backend: JSON body, `x-sb-error-code`, and
 * the echoed `X-Supabase-Api-Version` (supabase-js only reads `code` as the error code when it is present).
 */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  message?: string,
  headers?: Record<string, string>,
): FastifyReply {
  const newShape = wantsNewErrorShape(request.headers['x-supabase-api-version'])
  reply.code(ERRORS[code].status)
  reply.header('content-type', ERROR_CONTENT_TYPE)
  varyOrigin(reply)
  reply.header('x-sb-error-code', code)
  if (newShape) reply.header('x-supabase-api-version', API_VERSION_2024)
  if (headers) for (const [k, v] of Object.entries(headers)) reply.header(k, v)
  // A Buffer: Fastify would add `; charset=utf-8` to the type of a string body.
  return reply.send(Buffer.from(JSON.stringify(errorBody(code, newShape, message))))
}

/** Sends a backend-shaped answer, negotiated like every other error. */
export function sendBackendAnswer(request: FastifyRequest, reply: FastifyReply, answer: BackendAnswer): FastifyReply {
  const newShape = wantsNewErrorShape(request.headers['x-supabase-api-version'])
  reply.code(answer.status)
  reply.header('content-type', ERROR_CONTENT_TYPE)
  varyOrigin(reply)
  if (!newShape || answer.codeHeaderInNewShape !== false) reply.header('x-sb-error-code', answer.code)
  if (newShape) reply.header('x-supabase-api-version', API_VERSION_2024)
  const extra = { status: answer.status, ...(answer.fields ? { fields: answer.fields } : {}) }
  return reply.send(Buffer.from(JSON.stringify(errorBody(answer.code, newShape, answer.message, extra))))
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
