import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * Every error the gateway itself can produce: one entry each, never reused for another meaning
 * (the habit of Fastify's FST_ERR_* and undici's UND_ERR_*). Codes are Supabase Auth's own where
 * one exists, so supabase-js treats the gateway's errors like the backend's.
 */
export const ERRORS = {
  validation_failed: { status: 400, message: 'Request does not match the expected schema' },
  bad_json: { status: 400, message: 'Could not parse request body as JSON' },
  unsupported_media_type: { status: 415, message: 'Unsupported Content-Type' },
  request_entity_too_large: { status: 413, message: 'Request body is too large' },
  not_found: { status: 404, message: 'No route matches this request' },
  over_request_rate_limit: { status: 429, message: 'Request rate limit reached' },
  backend_unreachable: { status: 502, message: 'The authentication backend could not be reached' },
  request_timeout: { status: 504, message: 'The authentication backend did not answer in time' },
  unexpected_failure: { status: 500, message: 'Unexpected failure' },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof ERRORS

/** The first Supabase API version whose error body is `{code, message}` (backend-contract §2.1). */
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
  legacy: { code: number; error_code: ErrorCode; msg: string }
  current: { code: ErrorCode; message: string }
}

/** Builds the body in the shape the request negotiated (NOTES.md, "The standard JSON error body"). */
export function errorBody(code: ErrorCode, newShape: boolean, message?: string): ErrorBody['legacy'] | ErrorBody['current'] {
  const msg = message ?? ERRORS[code].message
  return newShape ? { code, message: msg } : { code: ERRORS[code].status, error_code: code, msg }
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
  reply.header('content-type', 'application/json; charset=utf-8')
  reply.header('x-sb-error-code', code)
  if (newShape) reply.header('x-supabase-api-version', API_VERSION_2024)
  if (headers) for (const [k, v] of Object.entries(headers)) reply.header(k, v)
  return reply.send(JSON.stringify(errorBody(code, newShape, message)))
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
    msg: { type: 'string', description: 'Human-readable message (legacy shape)', examples: ['Password should be at least 6 characters'] },
    message: { type: 'string', description: 'Human-readable message (2024-01-01 shape)', examples: ['Password should be at least 6 characters'] },
  },
  required: ['code'],
  additionalProperties: true,
} as const
