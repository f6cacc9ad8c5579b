import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { API_VERSION_2024, ERRORS, errorBody, wantsNewErrorShape, type ErrorCode } from '../errors.ts'
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
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-sb-error-code: ${code}\r\n` +
    (newShape ? `X-Supabase-Api-Version: ${API_VERSION_2024}\r\n` : '') +
    `X-Request-Id: ${requestId}\r\n` +
    'Connection: close\r\n' +
    '\r\n' +
    body
  )
}

/** The client-error handler, with the count of what it answered (the metrics read it). */
export interface ClientErrorHandler {
  (this: unknown, err: ConnectionError, socket: Socket): void
  /** Answers given, by `error\treason` (authgate's code, Node.js's code). */
  readonly counts: ReadonlyMap<string, number>
}

/** Node.js's error codes are a fixed set; anything else is not a label value. */
const reasonOf = (err: ConnectionError) =>
  typeof err.code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(err.code) ? err.code : 'other'

/**
 * Fastify's `clientErrorHandler`: timeouts (head or whole request), oversized heads and malformed
 * requests are answered in authgate's error shape with `Connection: close`, and logged — with the
 * request's method, URL (secrets redacted) and id when its head had been read. The same error from
 * many clients (a scanner, a broken proxy) is logged once per 10 s; the occurrences in between are
 * said in a summary line when those 10 s end, so a flood shows at once in the logs.
 */
export function createClientErrorHandler(options: { logIntervalMs?: number } = {}): ClientErrorHandler {
  const counts = new Map<string, number>()
  // Sockets already answered: the end of a connection cut by a timeout can raise a second parser
  // error (HPE_INVALID_EOF_STATE) for the same request, which is no new client error.
  const answered = new WeakSet<Socket>()
  let app: FastifyInstance | undefined
  const logThrottle = throttle(options.logIntervalMs ?? 10_000, {
    onSkipped(key, skipped) {
      const [error, reason, phase] = key.split('\t')
      app?.log.warn(
        { status: ERRORS[error as ErrorCode].status, error, reason, phase, occurrences: skipped, repeated: true },
        'client error',
      )
    },
  })
  // Fastify calls it with the instance as `this`.
  const handler = function clientErrorHandler(this: unknown, err: ConnectionError, socket: Socket): void {
    app = this as FastifyInstance
    // The client went away, or this connection has had its answer: nothing to answer, nothing worth a line.
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || socket.destroyed || answered.has(socket)) {
      socket.destroy()
      return
    }
    answered.add(socket)
    const code = codeForClientError(err)
    const reason = reasonOf(err)
    const countKey = `${code}\t${reason}`
    counts.set(countKey, (counts.get(countKey) ?? 0) + 1)
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

    const taken = logThrottle.take(`${code}\t${reason}\t${phase}`)
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
  return Object.assign(handler, { counts })
}
