import type { FastifyReply } from 'fastify'
import { errorResponse, varyOrigin, type ErrorCode } from '../errors.ts'

/**
 * One of authgate's own refusals on a service route, always in the 2024-01-01 shape
 * (`{code, message}`, docs/decisions.md, D74): the API-version header that picks the legacy shape
 * is Supabase Auth's, and the other services' clients (postgrest-js, storage-js) read `message`,
 * which the legacy shape lacks.
 */
export function serviceErrorResponse(code: ErrorCode, message?: string) {
  return errorResponse(message === undefined ? code : { code, message }, true)
}

export function sendServiceError(reply: FastifyReply, code: ErrorCode, message?: string): FastifyReply {
  const answer = serviceErrorResponse(code, message)
  const { vary: _vary, ...rest } = answer.headers
  reply.code(answer.status).headers(rest)
  varyOrigin(reply)
  return reply.send(Buffer.from(answer.body))
}
