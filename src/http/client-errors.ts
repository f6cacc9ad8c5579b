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
  /**
   * Closes the connections kept unused that have still sent nothing. For shutting down: Node.js's
   * `closeIdleConnections` sees only connections that have finished a request.
   */
  closeUnused(): void
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
     * Connections that have not sent a byte when Node.js's header check judges them are kept as
     * idle ones (see `keepUnused`) with this timeout, AUTHGATE_KEEP_ALIVE_TIMEOUT; without it they
     * are answered 408 there, as Node.js would.
     */
    unusedTimeoutMs?: number
    /** AUTHGATE_HEADER_TIMEOUT: how long bytes on such a connection have to become a request head. */
    headerTimeoutMs?: number
  } = {},
): ClientErrorHandler {
  const counts = new Map<string, number>()
  const { unusedTimeoutMs } = options
  // Connections kept unused (`keepUnused`), until they close.
  const kept = new Set<Socket>()
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
    if (unusedTimeoutMs !== undefined && err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead === 0) {
      keepUnused(socket, unusedTimeoutMs, 'unused')
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
      socket.end(rawErrorResponse(code, { header: requestIdHeader, value: requestId }, newShape, message))
      // The client may keep sending; the connection is done either way.
      setTimeout(() => socket.destroy(), 1000).unref()
    } else {
      socket.destroy()
    }
  }
  /**
   * A connection that has not sent a byte is not a slow client: nothing has been asked. Node.js
   * counts the head of a connection's first request from the moment it was accepted, and its check
   * runs before the loop reads what has arrived since its last read, so a client that opened the
   * connection ahead of its request (a browser's preconnect, a pool, a load balancer) and sends it
   * as the check falls due would read the 408 as the answer to that request. Such a connection is
   * kept as an idle keep-alive one is, for `timeoutMs` more (docs/decisions.md, D185): Node.js
   * counts the head of its first request from that request's first byte, as it does for every
   * later one. Then, if still nothing has been asked:
   * - nothing was ever sent: closed without an answer, as an idle keep-alive connection is;
   * - bytes that did not make a request head (a bare CRLF, which starts no request, or a head
   *   begun a moment ago): judged once more a header timeout later, then answered as a late head.
   * Judged on the turn after its timer, once the loop has read what had arrived by then.
   */
  function keepUnused(socket: Socket, timeoutMs: number, stage: 'unused' | 'begun'): void {
    const timer = setTimeout(() => setImmediate(judgeUnused, socket, stage), timeoutMs).unref()
    kept.add(socket)
    socket.once('close', () => {
      clearTimeout(timer)
      kept.delete(socket)
    })
  }
  function judgeUnused(socket: Socket, stage: 'unused' | 'begun'): void {
    if (socket.destroyed || asked(socket)) return
    if (socket.bytesRead === 0) socket.destroy()
    // A head begun before now has been judged by Node.js by then (it checks at least once a second).
    else if (stage === 'unused') keepUnused(socket, (options.headerTimeoutMs ?? 0) + 1000, 'begun')
    else if (app !== undefined) handler.call(app, requestTimeout(), socket)
    else socket.destroy()
  }
  const closeUnused = () => {
    for (const socket of kept) if (socket.bytesRead === 0 && !asked(socket)) socket.destroy()
  }
  return Object.assign(handler, { counts, closeUnused })
}

/** Whether a request has come on the connection: one answered, being answered, or being read. */
function asked(socket: Socket): boolean {
  const s = socket as Socket & { _httpMessage?: unknown; parser?: { incoming?: unknown } | null }
  return socket.bytesWritten > 0 || s._httpMessage != null || s.parser?.incoming != null
}

/** The error Node.js gives its own header and request timeouts. */
function requestTimeout(): ConnectionError {
  return Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' })
}
