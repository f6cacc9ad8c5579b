import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { ERRORS, errorResponse, wantsNewErrorShape, type ErrorCode } from '../errors.ts'
import { throttle } from '../core/log-throttle.ts'
import { redactUrl } from '../observability/redact.ts'
import { newRequestId, requestIdOf } from '../observability/request-id.ts'

// Read from the module object: an ESM import of node:http loads Node.js's bundled undici (src/observability/metrics.ts).
const { STATUS_CODES } = process.getBuiltinModule('node:http')

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
export function createClientErrorHandler(
  requestIdHeader: string,
  options: {
    logIntervalMs?: number
    /**
     * A connection that has not sent a byte when Node.js's header check judges it is left open, not
     * answered 408 (see below); src/http/connection-sweep.ts closes it if it never asks anything.
     */
    keepUnused?: boolean
  } = {},
): ClientErrorHandler {
  const counts = new Map<string, number>()
  const keepUnused = options.keepUnused === true
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
    // A connection that has not sent a byte is not a slow client: nothing has been asked. Node.js
    // counts the head of a connection's first request from the moment it was accepted, and its
    // check runs before the loop reads what has arrived since its last read, so a client that opened
    // the connection ahead of its request (a browser's preconnect, a pool, a load balancer) and sends
    // it as the check falls due would read a 408 as the answer to that request (docs/decisions.md,
    // D185). Left open, it is an idle connection to Node.js: the head of its first request is timed
    // from that request's first byte, as every later one's is. If it never asks anything, the
    // connection sweep closes it without an answer, as an idle keep-alive connection is closed (D187).
    if (keepUnused && err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead === 0) return
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
      socket.end(rawErrorResponse(code, { header: requestIdHeader, value: requestId }, newShape, message))
      // The client may keep sending; the connection is done either way.
      setTimeout(() => socket.destroy(), 1000).unref()
    } else {
      socket.destroy()
    }
  }
  return Object.assign(handler, { counts })
}
