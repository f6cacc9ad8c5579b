import type { FastifyReply, FastifyRequest } from 'fastify'
import type { BackendSpan, BackendTracer } from '../core/trace-event.ts'
import type { SupabaseAuthClient } from '../core/backend.ts'
import { READ_ENCODING } from '../core/held-answer.ts'
import { AuthgateError, sendError } from '../errors.ts'
import { failureKind, recordBackend, type BackendErrorKind, type BackendExchange } from '../core/backend-timing.ts'
import { throttle } from '../core/log-throttle.ts'
import { clientIp } from './client-ip.ts'
import { outboundRequestHeaders } from './headers.ts'
import { mergeOwnHeaders, ownHeaders, Relay, type AnswerRewrite, type RelayOwner } from './relay.ts'
import { ResponseCache } from './response-cache.ts'

export interface ForwarderOptions {
  /** The connection to Supabase Auth: base path, `apikey`, request-id header, timeouts, pool. */
  backend: SupabaseAuthClient
  /**
   * Cache for routes marked cacheable: lifetime of answers the backend sends without freshness
   * information (default 10 s; 0 caches only what the backend marks). `false`: no cache.
   */
  cache?: { defaultTtlMs: number } | false
  /** authgate answers CORS itself: the backend's `Access-Control-*` headers are not relayed. */
  ownCors?: boolean
  /** The names of authgate's own cookies (session, device): never sent on to Supabase Auth. */
  ownCookies?: readonly string[] | undefined
}

/** Called once per backend exchange, when it ends (metrics). */
export type ExchangeObserver = (request: FastifyRequest, exchange: BackendExchange) => void

export interface ForwardTarget {
  method: string
  /** Backend path relative to the backend base URL, already encoded. */
  path: string
  /** The exact request bytes, or undefined for no body. */
  body: Buffer | undefined
  /** The query string (with its `?`) sent in place of the request's own (a translated `client_id`). */
  query?: string | undefined
  /** The answer is the same for every client and may be served from the response cache. */
  cacheable?: boolean
  /** Request headers sent in place of the client's (lower-case name → value). */
  headers?: Record<string, string>
  /** The answer is held whole and changed before it is relayed (src/proxy/relay.ts); not cached unless `rewriteCacheable`. */
  rewrite?: AnswerRewrite
  /** `rewrite` gives every client the same answer (a route's mend alone): the rewritten answer may be cached. */
  rewriteCacheable?: boolean
}

/**
 * The one forwarder every proxied route shares: original bytes out, the backend's status, headers
 * and body bytes back. One keep-alive pool to the backend origin.
 */
// The client span of the request's exchange, until it ends (one exchange per request).
const kBackendSpan = Symbol('authgate.backendSpan')
type WithBackendSpan = FastifyRequest & { [kBackendSpan]?: BackendSpan | undefined }
/** The client's trace context is replaced by the client span's when tracing is on. */
const TRACE_HEADERS = ['traceparent', 'tracestate']

export class Forwarder {
  readonly #backend: SupabaseAuthClient
  readonly #timeoutMs: number
  readonly #cache: ResponseCache | undefined
  readonly #ownCors: boolean
  readonly #ownCookies: readonly string[]
  // While the backend is down every request fails the same way: one line per kind and 10 s, and
  // at the end of those 10 s a line with how many more there were.
  readonly #lastFailure = new Map<string, { log: FastifyRequest['log']; level: 'warn' | 'error'; message: string }>()
  readonly #errorLog = throttle(10_000, {
    onSkipped: (kind, skipped) => {
      const last = this.#lastFailure.get(kind)
      last?.log[last.level]({ kind, occurrences: skipped, repeated: true }, last.message)
    },
  })
  /** Set by the application (metrics); called when each exchange ends. */
  observer: ExchangeObserver | undefined
  /** Set by the application when tracing is on: a client span per exchange. */
  tracer: BackendTracer | undefined
  // What every relay reports to: one object for all requests, no closures per request.
  readonly #owner: RelayOwner = {
    exchanged: (relay, status, error) => this.#end(relay.options.request, relay.startedAt, status, error),
    failed: (relay, err) => this.#answerFailure(relay, err),
  }

  constructor(options: ForwarderOptions) {
    this.#backend = options.backend
    this.#timeoutMs = options.backend.options.timeoutMs
    this.#cache = options.cache === false ? undefined : new ResponseCache(options.cache ?? { defaultTtlMs: 10_000 })
    this.#ownCors = options.ownCors ?? false
    this.#ownCookies = options.ownCookies ?? []
  }

  #end(request: FastifyRequest, started: number, status: number | undefined, error?: BackendErrorKind): void {
    const exchange: BackendExchange = { durationMs: performance.now() - started }
    if (status !== undefined) exchange.status = status
    if (error !== undefined) exchange.error = error
    recordBackend(request, exchange)
    this.observer?.(request, exchange)
    const span = (request as WithBackendSpan)[kBackendSpan]
    if (span !== undefined) {
      ;(request as WithBackendSpan)[kBackendSpan] = undefined
      span.end(status, error)
    }
  }

  /** Logs a backend failure, at most once per 10 s for each kind, with the number it stands for. */
  #logFailure(request: FastifyRequest, level: 'warn' | 'error', kind: string, details: object, message: string): void {
    const taken = this.#errorLog.take(kind)
    this.#lastFailure.set(kind, { log: request.server.log, level, message })
    if (taken.write) request.log[level]({ ...details, occurrences: taken.occurrences }, message)
  }

  /** The response cache of cacheable routes (undefined when turned off). */
  get cache(): ResponseCache | undefined {
    return this.#cache
  }

  /**
   * Sends one request and relays the answer: from the cache when the route allows and a fresh
   * answer is stored, else to the backend with the request's own bytes and cleaned headers, the
   * answer relayed by a `Relay` (src/proxy/relay.ts). `onDone` is called once the answer is over;
   * a synchronous route handler passes none (Fastify then waits for no promise).
   */
  forward(request: FastifyRequest, reply: FastifyReply, target: ForwardTarget, onDone?: () => void): void {
    const cache =
      target.cacheable && (target.rewrite === undefined || target.rewriteCacheable === true) ? this.#cache : undefined
    const cacheKey = cache?.keyFor(request.raw)
    if (cacheKey !== undefined && this.#answerFromCache(request, reply, cache!, cacheKey)) {
      onDone?.()
      return
    }
    const path = this.#backendPath(request, target)
    let traced: BackendSpan | undefined
    if (this.tracer !== undefined) {
      const q = path.indexOf('?')
      traced = this.tracer.start(request, target.method, q === -1 ? path : path.slice(0, q))
      ;(request as WithBackendSpan)[kBackendSpan] = traced
    }
    const relay = new Relay({
      request,
      reply,
      backendPath: target.path,
      ownCors: this.#ownCors,
      cache: cacheKey === undefined ? undefined : { cache: cache!, key: cacheKey },
      rewrite: target.rewrite,
      owner: this.#owner,
      onDone,
    })
    this.#backend.dispatch(
      {
        method: target.method,
        path,
        headers: this.#outboundHeaders(request, target, traced?.headers),
        body: target.body ?? null,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      },
      relay,
    )
  }

  /** Answers from the response cache; false when nothing fresh is stored for this request. */
  #answerFromCache(request: FastifyRequest, reply: FastifyReply, cache: ResponseCache, key: string): boolean {
    const hit = cache.get(key, request.headers)
    if (hit === undefined) return false
    const flat = mergeOwnHeaders(hit.headers.slice(), ownHeaders(reply), this.#ownCors)
    flat.push('age', String(cache.ageSeconds(hit)))
    reply.hijack()
    reply.raw.writeHead(hit.status, flat)
    reply.raw.end(hit.body)
    return true
  }

  /** The backend path: its base path, the route's target, and the raw query string, never re-encoded (docs/decisions.md, D3). */
  #backendPath(request: FastifyRequest, target: ForwardTarget): string {
    const url = request.raw.url ?? ''
    const q = url.indexOf('?')
    if (target.query !== undefined) return this.#backend.basePath + target.path + target.query
    // A backend at its origin's root, and a target spelled as the request's path ends (a route
    // mounted at its backend path, `/auth/token` → `/token`): the same text is the end of the
    // request's target, cut from it. Joined, it would be a string of two parts that undici's checks
    // of the path flatten through a call into the runtime on every request.
    if (this.#backend.basePath === '') {
      const from = (q === -1 ? url.length : q) - target.path.length
      if (from >= 0 && url.startsWith(target.path, from)) return from === 0 ? url : url.slice(from)
    }
    return this.#backend.basePath + target.path + (q === -1 ? '' : url.slice(q))
  }

  /**
   * The request's headers after hygiene, with its backend identity (client IP, authgate's request
   * id, never the client's own unless it came through a trusted proxy, the configured apikey) in
   * place of the client's.
   */
  #outboundHeaders(request: FastifyRequest, target: ForwardTarget, trace?: Record<string, string>): string[] {
    // An answer authgate reads is asked for uncompressed, whatever the page accepts.
    let headers =
      target.rewrite !== undefined ? { ...target.headers, 'accept-encoding': READ_ENCODING } : target.headers
    // With tracing on, the client span's trace context replaces the client's.
    if (trace !== undefined) headers = { ...headers, ...trace }
    return outboundRequestHeaders(request.raw.rawHeaders, request.headers, {
      identity: this.#backend.identityHeaders({ clientIp: clientIp(request), requestId: request.id }),
      // A trusted proxy's X-Forwarded-Host/-Proto, else authgate's own view (Fastify's trustProxy rule).
      host: request.host,
      proto: request.protocol,
      ownCookies: this.#ownCookies,
      replaced: headers
        ? [...this.#backend.replacedHeaders, ...Object.keys(headers), ...(trace ? TRACE_HEADERS : [])]
        : this.#backend.replacedHeaders,
      set: headers ? Object.entries(headers).flat() : undefined,
    })
  }

  /** A backend exchange that failed: 504 or 502 in our shape before the answer started, a cut connection after. */
  #answerFailure(relay: Relay, err: Error & { code?: string }): void {
    const { request, reply, backendPath } = relay.options
    if (relay.started) {
      this.#end(request, relay.startedAt, reply.raw.statusCode, 'relay')
      this.#logFailure(
        request,
        'warn',
        'relay',
        { err: { code: err.code, message: err.message } },
        'relaying the backend body failed',
      )
      reply.raw.destroy()
      return
    }
    // A rewrite's own refusal (a session store that cannot answer, say): already in our terms.
    if (err instanceof AuthgateError) {
      sendError(request, reply, err)
      return
    }
    const code = err.code ?? ''
    const kind = failureKind(code)
    if (kind === 'timeout') {
      this.#end(request, relay.startedAt, undefined, 'timeout')
      this.#logFailure(request, 'warn', 'timeout', { backendPath }, 'backend did not answer in time')
      sendError(request, reply, 'request_timeout')
      return
    }
    this.#end(request, relay.startedAt, undefined, kind)
    this.#logFailure(
      request,
      'error',
      `${kind}:${code}`,
      { err: { code, message: err.message }, backendPath },
      kind === 'failed' ? 'backend request failed' : 'backend unreachable',
    )
    // The internal address stays in the log, never in the answer.
    sendError(request, reply, 'backend_unreachable')
  }
}
