import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import {
  API_VERSION_2024,
  ERROR_CONTENT_TYPE,
  ERRORS,
  errorBody,
  wantsNewErrorShape,
  type ErrorCode,
} from '../errors.ts'
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
 * parse or that timed out. Same body, `x-sb-error-code` and shape negotiation as `sendError`, and
 * `Connection: close`, since the connection is closed after it.
 */
export function rawErrorResponse(code: ErrorCode, requestId: string, newShape: boolean, message?: string): string {
  const { status } = ERRORS[code]
  const body = JSON.stringify(errorBody(code, newShape, message))
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    `Content-Type: ${ERROR_CONTENT_TYPE}\r\n` +
    'Vary: Origin\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-sb-error-code: ${code}\r\n` +
    (newShape ? `X-Supabase-Api-Version: ${API_VERSION_2024}\r\n` : '') +
    `X-Request-Id: ${requestId}\r\n` +
    'Connection: close\r\n' +
    '\r\n' +
    body
  )
}

/**
 * Fastify's `clientErrorHandler`: timeouts (head or whole request), oversized heads and malformed
 * requests are answered in authgate's error shape with `Connection: close`, and logged — with the
 * request's method, URL (secrets redacted) and id when its head had been read. The same error from
 * many clients (a scanner, a broken proxy) is logged once per 10 s with a count.
 */
export function createClientErrorHandler() {
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
      socket.end(rawErrorResponse(code, requestId, newShape, message))
      // The client may keep sending; the connection is done either way.
      setTimeout(() => socket.destroy(), 1000).unref()
    } else {
      socket.destroy()
    }
  }
}
