import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { ERRORS, errorResponse, wantsNewErrorShape, type ErrorCode } from '../errors.ts'
import { throttle } from '../observability/log-throttle.ts'
import { redactUrl } from '../observability/redact.ts'
import { newRequestId, requestIdOf } from '../observability/request-id.ts'

interface ConnectionError extends Error {
  code?: string
}

/** Node.js's parser and timeout errors as authgate's error codes. */
export function codeForClientError(err: ConnectionError): ErrorCode {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'client_timeout'
  if (err.code === 'HPE_HEADER_OVERFLOW') return 'request_header_too_large'
  return 'malformed_request'
}

/**
 * The whole answer, written on the socket: there is no Fastify reply for a request Node.js could not
 * parse or that timed out. Rendered by the one error writer (same body, headers and shape
 * negotiation as every other answer), with the request id in the configured header, and
 * `Connection: close`, since the connection is closed after it.
 */
export function rawErrorResponse(
  code: ErrorCode,
  requestId: { header: string; value: string },
  newShape: boolean,
  message?: string,
): string {
  const answer = errorResponse(message === undefined ? code : { code, message }, newShape)
  let head = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\n`
  for (const [name, value] of Object.entries(answer.headers)) head += `${name}: ${value}\r\n`
  return (
    head +
    `content-length: ${Buffer.byteLength(answer.body)}\r\n` +
    `${requestId.header}: ${requestId.value}\r\n` +
    'connection: close\r\n' +
    '\r\n' +
    answer.body
  )
}

/**
 * Fastify's `clientErrorHandler`: timeouts (head or whole request), oversized heads and malformed
 * requests are answered in authgate's error shape with `Connection: close`, and logged — with the
 * request's method, URL (secrets redacted) and id when its head had been read. The same error from
 * many clients (a scanner, a broken proxy) is logged once per 10 s with a count.
 */
export function createClientErrorHandler(requestIdHeader: string) {
  const logThrottle = throttle(10_000)
  // Fastify calls it with the instance as `this`.
  return function clientErrorHandler(this: unknown, err: ConnectionError, socket: Socket): void {
    const app = this as FastifyInstance
    // The client went away: nothing to answer, nothing worth a line.
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || socket.destroyed) {
      socket.destroy()
      return
    }
    const code = codeForClientError(err)
    // A request whose head was read (the body was too slow) is still attached to the socket.
    const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined
    const req: IncomingMessage | undefined = res?.req
    const requestId = (req && requestIdOf(req)) ?? newRequestId()
    const phase = code !== 'client_timeout' ? 'head' : req !== undefined ? 'body' : 'head'
    const message =
      code === 'client_timeout'
        ? phase === 'body'
          ? 'The request body was not received in time'
          : 'The request headers were not received in time'
        : undefined

    const taken = logThrottle.take(`${code}:${err.code ?? ''}:${phase}`)
    if (taken.write) {
      const line: Record<string, unknown> = {
        reqId: requestId,
        status: ERRORS[code].status,
        error: code,
        reason: err.code ?? err.message,
        phase,
        ip: socket.remoteAddress,
        occurrences: taken.occurrences,
      }
      if (req !== undefined) {
        line.method = req.method
        line.url = redactUrl(req.url ?? '')
      }
      app.log.warn(line, 'client error')
    }

    if (socket.writable && (res === undefined || !res.headersSent)) {
      const newShape = wantsNewErrorShape(req?.headers['x-supabase-api-version'])
      socket.end(rawErrorResponse(code, { header: requestIdHeader, value: requestId }, newShape, message))
      // The client may keep sending; the connection is done either way.
      setTimeout(() => socket.destroy(), 1000).unref()
    } else {
      socket.destroy()
    }
  }
}
