import type { FastifyReply, FastifyRequest } from 'fastify'
import { Pool, type Dispatcher } from 'undici'
import { sendError } from '../errors.ts'
import { recordBackend, type BackendErrorKind, type BackendExchange } from '../observability/backend-timing.ts'
import { throttle } from '../observability/log-throttle.ts'
import { clientIp } from './client-ip.ts'
import { inboundResponseHeaders, outboundRequestHeaders } from './headers.ts'
import { ResponseCache } from './response-cache.ts'

export interface ForwarderOptions {
  backendUrl: URL
  /** Time the backend has to send its response headers. */
  timeoutMs: number
  connections: number
  /**
   * Cache for routes marked cacheable: lifetime of answers the backend sends without freshness
   * information (default 10 s; 0 caches only what the backend marks). `false`: no cache.
   */
  cache?: { defaultTtlMs: number } | false
  /** Time to open a connection. Default: the response timeout, at most 10 s. */
  connectTimeoutMs?: number
  /** Hosted Supabase: sent as `apikey` on every request, replacing the client's. */
  apiKey?: string | undefined
  /** The header the request id is sent in (Supabase Auth logs it with GOTRUE_API_REQUEST_ID_HEADER). */
  requestIdHeader?: string
  /** authgate answers CORS itself: the backend's `Access-Control-*` headers are not relayed. */
  ownCors?: boolean
}

/** Called once per backend exchange, when it ends (metrics). */
export type ExchangeObserver = (request: FastifyRequest, exchange: BackendExchange) => void

export interface ForwardTarget {
  method: string
  /** Backend path relative to the backend base URL, already encoded. */
  path: string
  /** The exact request bytes, or undefined for no body. */
  body: Buffer | undefined
  /** The answer is the same for every client and may be served from the response cache. */
  cacheable?: boolean
  /** Request headers sent in place of the client's (lower-case name → value). */
  headers?: Record<string, string>
}

/** Bodies up to this size are written in one piece with the response head. */
const BUFFER_LIMIT = 64 * 1024

// Errors that mean no usable connection to the backend (502); a connect timeout is unreachability too.
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
])

/**
 * The one forwarder every proxied route shares: original bytes out, the backend's status, headers
 * and body bytes back. One keep-alive pool to the backend origin.
 */
export class Forwarder {
  readonly #pool: Pool
  readonly #basePath: string
  readonly #timeoutMs: number
  readonly #cache: ResponseCache | undefined
  readonly #extraHeaders: string[]
  readonly #replacedHeaders: string[]
  readonly #requestIdHeader: string | undefined
  readonly #ownCors: boolean
  // While the backend is down every request fails the same way: one line per kind and 10 s.
  readonly #errorLog = throttle(10_000)
  /** Set by the application (metrics); called when each exchange ends. */
  observer: ExchangeObserver | undefined

  constructor(options: ForwarderOptions) {
    this.#pool = new Pool(options.backendUrl.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 10_000,
      connectTimeout: options.connectTimeoutMs ?? Math.min(options.timeoutMs, 10_000),
    })
    this.#basePath = options.backendUrl.pathname === '/' ? '' : options.backendUrl.pathname
    this.#timeoutMs = options.timeoutMs
    this.#cache = options.cache === false ? undefined : new ResponseCache(options.cache ?? { defaultTtlMs: 10_000 })
    this.#extraHeaders = options.apiKey !== undefined ? ['apikey', options.apiKey] : []
    this.#replacedHeaders = [
      ...(options.requestIdHeader !== undefined ? [options.requestIdHeader.toLowerCase()] : []),
      ...(options.apiKey !== undefined ? ['apikey'] : []),
    ]
    this.#requestIdHeader = options.requestIdHeader
    this.#ownCors = options.ownCors ?? false
  }

  #end(request: FastifyRequest, started: number, status: number | undefined, error?: BackendErrorKind): void {
    const exchange: BackendExchange = { durationMs: performance.now() - started }
    if (status !== undefined) exchange.status = status
    if (error !== undefined) exchange.error = error
    recordBackend(request, exchange)
    this.observer?.(request, exchange)
  }

  /** Logs a backend failure, at most once per 10 s for each kind, with the number it stands for. */
  #logFailure(request: FastifyRequest, level: 'warn' | 'error', kind: string, details: object, message: string): void {
    const taken = this.#errorLog.take(kind)
    if (taken.write) request.log[level]({ ...details, occurrences: taken.occurrences }, message)
  }

  /** The response cache of cacheable routes (undefined when turned off). */
  get cache(): ResponseCache | undefined {
    return this.#cache
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
    const cache = target.cacheable ? this.#cache : undefined
    const cacheKey = cache?.keyFor(request.raw)
    if (cacheKey !== undefined) {
      const hit = cache!.get(cacheKey, request.headers)
      if (hit !== undefined) {
        const flat = mergeOwnHeaders(hit.headers.slice(), reply.getHeaders(), this.#ownCors)
        flat.push('age', String(cache!.ageSeconds(hit)))
        reply.hijack()
        reply.raw.writeHead(hit.status, flat)
        reply.raw.end(hit.body)
        return Promise.resolve()
      }
    }
    const url = request.raw.url ?? ''
    const q = url.indexOf('?')
    // The raw query string, never re-encoded (docs/decisions.md, D3).
    const path = this.#basePath + target.path + (q === -1 ? '' : url.slice(q))
    // authgate's request id (never the client's own, unless it came through a trusted proxy), and
    // the configured apikey in place of the client's, in the same pass as the header hygiene.
    const idHeader = this.#requestIdHeader
    const headers = outboundRequestHeaders(request.raw.rawHeaders, request.headers, {
      clientIp: clientIp(request),
      host: request.headers.host,
      proto: request.protocol,
      replaced: target.headers ? [...this.#replacedHeaders, ...Object.keys(target.headers)] : this.#replacedHeaders,
      set: [
        ...(idHeader === undefined ? [] : [idHeader, request.id]),
        ...this.#extraHeaders,
        ...(target.headers ? Object.entries(target.headers).flat() : []),
      ],
    })
    const ownCors = this.#ownCors
    const startedAt = performance.now()
    const res = reply.raw

    return new Promise<void>((resolve) => {
      let controller: Dispatcher.DispatchController | undefined
      let started = false
      let held: Buffer[] | undefined = []
      let heldBytes = 0
      let clientGone = false
      // What the cache would store: the status and headers relayed (before our own are merged).
      let relayedStatus = 0
      let relayedHeaders: string[] | undefined
      // A client that goes away cancels its backend request.
      const onClose = () => {
        if (res.writableFinished) return
        clientGone = true
        controller?.abort(new Error('client closed the connection'))
      }
      // Set when a write is refused; 'drain' may come before pause() is reached, so it clears the flag.
      // The listener is added only once a body streams: most answers are held and written in one piece.
      let waitingForDrain = false
      let drainListening = false
      const onDrain = () => {
        waitingForDrain = false
        controller?.resume()
      }
      const write = (b: Buffer) => {
        if (!drainListening) {
          drainListening = true
          res.on('drain', onDrain)
        }
        if (!res.write(b)) waitingForDrain = true
      }
      res.once('close', onClose)
      const done = () => {
        res.off('close', onClose)
        if (drainListening) res.off('drain', onDrain)
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
            this.#end(request, startedAt, statusCode)
            const relayed = inboundResponseHeaders(c.rawHeaders as Buffer[])
            if (cacheKey !== undefined) {
              relayedStatus = statusCode
              relayedHeaders = relayed.slice()
            }
            const flat = mergeOwnHeaders(relayed, reply.getHeaders(), ownCors)
            // Write the backend's answer directly: Fastify would re-case, merge and reorder headers.
            reply.hijack()
            started = true
            try {
              res.writeHead(statusCode, flat)
            } catch (err) {
              this.#end(request, startedAt, statusCode, 'bad_header')
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
            else {
              const body = held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes)
              res.end(body)
              if (relayedHeaders !== undefined)
                cache!.store(cacheKey!, relayedStatus, relayedHeaders, body, request.headers)
            }
            done()
          },
          onResponseError: (_c, err: Error & { code?: string }) => {
            if (clientGone) return done()
            if (started) {
              this.#end(request, startedAt, reply.raw.statusCode, 'relay')
              this.#logFailure(
                request,
                'warn',
                'relay',
                { err: { code: err.code, message: err.message } },
                'relaying the backend body failed',
              )
              res.destroy()
              return done()
            }
            const code = err.code ?? ''
            if (code === 'UND_ERR_HEADERS_TIMEOUT') {
              this.#end(request, startedAt, undefined, 'timeout')
              this.#logFailure(
                request,
                'warn',
                'timeout',
                { backendPath: target.path },
                'backend did not answer in time',
              )
              sendError(request, reply, 'request_timeout')
            } else {
              const kind =
                code === 'UND_ERR_CONNECT_TIMEOUT'
                  ? 'connect_timeout'
                  : UNREACHABLE.has(code)
                    ? 'unreachable'
                    : 'failed'
              this.#end(request, startedAt, undefined, kind)
              this.#logFailure(
                request,
                'error',
                `${kind}:${code}`,
                { err: { code, message: err.message }, backendPath: target.path },
                kind === 'failed' ? 'backend request failed' : 'backend unreachable',
              )
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
function mergeOwnHeaders(relayed: string[], own: Record<string, unknown>, ownCors: boolean): string[] {
  // Only authgate's CORS answer counts: the backend's (`*` from Supabase Auth) would override the origin list.
  const flat = ownCors
    ? relayed.filter((_, i, all) => !all[i - (i % 2)]!.toLowerCase().startsWith('access-control-'))
    : relayed
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
