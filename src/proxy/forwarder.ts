import type { FastifyReply, FastifyRequest } from 'fastify'
import { Pool, type Dispatcher } from 'undici'
import { sendError } from '../errors.ts'
import { clientIp } from './client-ip.ts'
import { inboundResponseHeaders, outboundRequestHeaders } from './headers.ts'

export interface ForwarderOptions {
  backendUrl: URL
  /** Time the backend has to send its response headers. */
  timeoutMs: number
  connections: number
}

export interface ForwardTarget {
  method: string
  /** Backend path relative to the backend base URL, already encoded. */
  path: string
  /** The exact request bytes, or undefined for no body. */
  body: Buffer | undefined
}

/** Bodies up to this size are written in one piece with the response head. */
const BUFFER_LIMIT = 64 * 1024

// Errors that mean no usable connection to the backend (502); a connect timeout is unreachability too.
const UNREACHABLE = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ETIMEDOUT',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED',
])

/**
 * The one forwarder every proxied route shares: original bytes out, the backend's status, headers
 * and body bytes back. One keep-alive pool to the backend origin.
 */
export class Forwarder {
  readonly #pool: Pool
  readonly #basePath: string
  readonly #timeoutMs: number

  constructor(options: ForwarderOptions) {
    this.#pool = new Pool(options.backendUrl.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 10_000,
      connectTimeout: Math.min(options.timeoutMs, 10_000),
    })
    this.#basePath = options.backendUrl.pathname === '/' ? '' : options.backendUrl.pathname
    this.#timeoutMs = options.timeoutMs
  }

  close(): Promise<void> {
    return this.#pool.close()
  }

  /**
   * Sends one request and relays the answer. Uses undici's dispatch handler API rather than
   * `request()`: no Readable, no AbortController per request, chunks go straight to the client
   * socket with backpressure (the shape of undici's own proxy agent).
   */
  forward(request: FastifyRequest, reply: FastifyReply, target: ForwardTarget): Promise<void> {
    const url = request.raw.url ?? ''
    const q = url.indexOf('?')
    // The raw query string, never re-encoded (NOTES.md, "Forwarding").
    const path = this.#basePath + target.path + (q === -1 ? '' : url.slice(q))
    const headers = outboundRequestHeaders(request.raw.rawHeaders, request.headers, {
      clientIp: clientIp(request),
      host: request.headers.host,
      proto: request.protocol,
    })
    const res = reply.raw

    return new Promise<void>((resolve) => {
      let controller: Dispatcher.DispatchController | undefined
      let started = false
      let held: Buffer[] | undefined = []
      let heldBytes = 0
      let clientGone = false
      // A client that goes away cancels its backend request.
      const onClose = () => {
        if (res.writableFinished) return
        clientGone = true
        controller?.abort(new Error('client closed the connection'))
      }
      // Set when a write is refused; 'drain' may come before pause() is reached, so it clears the flag.
      let waitingForDrain = false
      const write = (b: Buffer) => {
        if (!res.write(b)) waitingForDrain = true
      }
      const onDrain = () => {
        waitingForDrain = false
        controller?.resume()
      }
      res.once('close', onClose)
      res.on('drain', onDrain)
      const done = () => {
        res.off('close', onClose)
        res.off('drain', onDrain)
        resolve()
      }

      this.#pool.dispatch(
        {
          method: target.method,
          path,
          headers,
          body: target.body ?? null,
          headersTimeout: this.#timeoutMs,
          bodyTimeout: this.#timeoutMs,
        },
        {
          onRequestStart(c) {
            controller = c
            if (clientGone) c.abort(new Error('client closed the connection'))
          },
          onResponseStart: (c, statusCode) => {
            const flat = mergeOwnHeaders(c.rawHeaders as Buffer[], reply.getHeaders())
            // Write the backend's answer directly: Fastify would re-case, merge and reorder headers.
            reply.hijack()
            started = true
            try {
              res.writeHead(statusCode, flat)
            } catch (err) {
              request.log.error({ err }, 'backend sent a header Node.js refuses to relay')
              c.abort(err as Error)
              res.destroy()
            }
          },
          onResponseData(c, chunk) {
            // Small answers (most of Supabase Auth's) are held and written with the head in one
            // syscall; past BUFFER_LIMIT the body streams with backpressure.
            if (held !== undefined) {
              held.push(chunk)
              heldBytes += chunk.length
              if (heldBytes <= BUFFER_LIMIT) return
              for (const b of held) write(b)
              held = undefined
            } else write(chunk)
            if (waitingForDrain) c.pause()
          },
          onResponseEnd() {
            if (held === undefined || held.length === 0) res.end()
            else res.end(held.length === 1 ? held[0] : Buffer.concat(held, heldBytes))
            done()
          },
          onResponseError: (_c, err: Error & { code?: string }) => {
            if (clientGone) return done()
            if (started) {
              request.log.warn({ err: { code: err.code, message: err.message } }, 'relaying the backend body failed')
              res.destroy()
              return done()
            }
            const code = err.code ?? ''
            if (code === 'UND_ERR_HEADERS_TIMEOUT') {
              request.log.warn({ backendPath: target.path }, 'backend did not answer in time')
              sendError(request, reply, 'request_timeout')
            } else {
              request.log.error({ err: { code, message: err.message }, backendPath: target.path }, UNREACHABLE.has(code) ? 'backend unreachable' : 'backend request failed')
              // The internal address stays in the log, never in the answer.
              sendError(request, reply, 'backend_unreachable')
            }
            done()
          },
        },
      )
    })
  }
}

/**
 * The backend's headers (hop-by-hop aside), then those the gateway's own hooks set (rate-limit
 * headers) unless the backend sent the same name.
 */
function mergeOwnHeaders(raw: Buffer[], own: Record<string, unknown>): string[] {
  const flat = inboundResponseHeaders(raw)
  let seen: Set<string> | undefined
  for (const name in own) {
    const value = own[name]
    if (value === undefined) continue
    if (seen === undefined) {
      seen = new Set()
      for (let i = 0; i < flat.length; i += 2) seen.add(flat[i]!.toLowerCase())
    }
    if (seen.has(name.toLowerCase())) continue
    if (Array.isArray(value)) for (const v of value) flat.push(name, String(v))
    else flat.push(name, String(value))
  }
  return flat
}
