// Node.js's own, not the global: the global `performance` is a lazy getter that runs a check on
// every read (docs/decisions.md, D200, D208).
import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Pool as UndiciPool } from 'undici'
import { knownToUndici, Pool } from '../core/backend.ts'
import type { BackendErrorKind, BackendExchange } from '../core/backend-timing.ts'
import { failureKind, recordBackend } from '../core/backend-timing.ts'
import { throttle } from '../core/log-throttle.ts'
import { clientIp } from '../proxy/client-ip.ts'
import type { ExchangeObserver } from '../proxy/forwarder.ts'
import { outboundRequestHeaders } from '../proxy/headers.ts'
import type { ServicesConfig, ServiceUpstream } from './config.ts'
import { refusedCredentials } from './credentials.ts'
import { sendServiceError } from './errors.ts'
import { KeyBook } from './keys.ts'
import { StreamRelay, type StreamRelayRoute } from './relay.ts'
import { judgeServicePath } from './path.ts'
import { planServiceRequest, replacedNames } from './request.ts'
import { relayed } from './scavenge.ts'
import type { SessionGate } from '../sessions/gate.ts'

/** What one mounted service's requests share: its upstream, pool, replaced names and relay owner. */
interface ServiceRoute {
  upstream: ServiceUpstream
  pool: UndiciPool
  /** The client headers its requests replace (the service's and authgate's own), with and without `authorization`. */
  replaced: readonly string[]
  replacedWithAuthorization: readonly string[]
  /** What its relays share. */
  relay: StreamRelayRoute
}

/** The collector's count of a request body's chunks (src/services/scavenge.ts). */
const countRelayed = (chunk: Buffer) => relayed(chunk.length)

export interface ServiceProxyOptions {
  config: ServicesConfig
  /** The header the request id travels in (lower case). */
  requestIdHeader: string
  /** The header the one client IP travels in besides `x-forwarded-for` (lower case). */
  clientIpHeader: string
  /** authgate answers CORS itself: the upstreams' `Access-Control-*` headers are not relayed. */
  ownCors: boolean
  /** authgate's session cookie, never sent to a service. */
  sessionCookie: string | undefined
  /** Cookie sessions: a stand-in bearer is swapped for the session's real token (src/sessions/gate.ts). */
  sessions?: SessionGate | undefined
  /** The metrics' observer, read at each exchange (the service sets it after registration). */
  observer: () => ExchangeObserver | undefined
}

/**
 * Requests to the services beside Auth: one keep-alive pool per upstream origin, request bodies
 * streamed from the client as they arrive and answers streamed back (src/services/relay.ts), the
 * same header hygiene as the auth routes (src/proxy/headers.ts) with the service's rewrites and key
 * rules on top (src/services/request.ts).
 */
export class ServiceProxy {
  readonly keys: KeyBook
  readonly #o: ServiceProxyOptions
  readonly #pools = new Map<string, UndiciPool>()
  readonly #errorLog = throttle(10_000)
  /** authgate's session cookie, never sent to a service (one list for every request). */
  readonly #sessionCookies: readonly string[] | undefined

  constructor(options: ServiceProxyOptions) {
    this.#o = options
    this.#sessionCookies = options.sessionCookie === undefined ? undefined : [options.sessionCookie]
    this.keys = new KeyBook(options.config.keys)
  }

  /** Cookie sessions, when on: Realtime's socket swaps stand-ins in its messages too. */
  get sessions(): SessionGate | undefined {
    return this.#o.sessions
  }

  /** The key a request without one is sent with (hosted Supabase's publishable key). */
  get defaultKey(): string | undefined {
    return this.#o.config.defaultKey
  }

  /** The pool of an upstream origin (shared by the services on one origin: REST and GraphQL). */
  pool(origin: string): UndiciPool {
    let pool = this.#pools.get(origin)
    if (pool === undefined) {
      pool = new Pool(origin, {
        connections: this.#o.config.connections,
        pipelining: 1,
        keepAliveTimeout: 10_000,
        connectTimeout: this.#o.config.connectTimeoutMs,
      })
      this.#pools.set(origin, pool)
    }
    return pool
  }

  /** The lower-case client headers authgate replaces on every service request. */
  ownNames(): string[] {
    const names = [this.#o.requestIdHeader]
    if (this.#o.clientIpHeader !== 'x-forwarded-for') names.push(this.#o.clientIpHeader)
    return names
  }

  /**
   * A service request's identity headers, as Supabase Auth's are built (`SupabaseAuthClient`'s
   * `identityHeaders`): one client IP, in the configured client-IP header too, and the request id.
   * No `apikey`: a service's key is the request's own, judged by the key rules.
   */
  #identity(ip: string, requestId: string): string[] {
    // Whole literals: pushing onto one reserved room for seventeen entries.
    if (this.#o.clientIpHeader === 'x-forwarded-for') return ['x-forwarded-for', ip, this.#o.requestIdHeader, requestId]
    return ['x-forwarded-for', ip, this.#o.clientIpHeader, ip, this.#o.requestIdHeader, requestId]
  }

  /** The identity headers of a request that did not come through Fastify (Realtime's socket). */
  identityOf(ip: string, requestId: string): string[] {
    return this.#identity(ip, requestId)
  }

  /**
   * The route handler of one mounted service. Synchronous unless a cookie session's stand-in must
   * be looked up first: Fastify then waits for no promise, and the relay reports to one owner per
   * service (no closures per request). `checksCredentials`: the route has no `onRequest` hook that
   * refuses a repeated credential header, so the handler does first (src/services/credentials.ts).
   */
  handler(
    upstream: ServiceUpstream,
    checksCredentials = false,
  ): (request: FastifyRequest, reply: FastifyReply) => Promise<void> | undefined {
    const route: ServiceRoute = {
      upstream,
      pool: this.pool(upstream.origin),
      replaced: [...replacedNames(upstream, false), ...this.ownNames()],
      replacedWithAuthorization: [...replacedNames(upstream, true), ...this.ownNames()],
      relay: {
        ownCors: this.#o.ownCors,
        inert: upstream.inert,
        owner: {
          answered: (relay, status) => this.#end(relay, status),
          failed: (relay, err) => this.#failure(relay, upstream, err),
        },
      },
    }
    // The names its requests carry that authgate sets (`x-forwarded-prefix`, the key headers, the
    // identity and the forwarded view), among undici's well-known ones, as Supabase Auth's are
    // (src/core/backend.ts, D232, D245): undici then takes each as it is on every request.
    knownToUndici([...route.replacedWithAuthorization, 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto'])
    const sessions = this.#o.sessions
    return (request, reply) => {
      if (checksCredentials && refusedCredentials(request, reply)) return undefined
      // Judged on the path's normal form, before anything else is asked of the request (D127).
      const target = judgeServicePath(upstream.row, request.method, request.raw.url ?? '/')
      if (!target.ok) {
        sendServiceError(reply, target.code, target.message)
        return undefined
      }
      if (sessions === undefined) {
        this.#send(route, request, reply, target, undefined, undefined)
        return undefined
      }
      // A cookie session's stand-in bearer goes on as the session's real access token.
      return sessions.forService(request, reply).then((swap) => {
        if (swap !== undefined && 'refusal' in swap) {
          sendServiceError(reply, swap.refusal.code, swap.refusal.message)
          return
        }
        const authorization = swap === undefined ? undefined : `Bearer ${swap.accessToken}`
        return new Promise<void>((resolve) => this.#send(route, request, reply, target, authorization, resolve))
      })
    }
  }

  /** Sends one service request (the client's own or its session's bearer) and relays the answer. */
  #send(
    route: ServiceRoute,
    request: FastifyRequest,
    reply: FastifyReply,
    target: { rest: string; query: string | undefined },
    authorization: string | undefined,
    onDone: (() => void) | undefined,
  ): void {
    const upstream = route.upstream
    const seen = authorization === undefined ? request.headers : { ...request.headers, authorization }
    const plan = planServiceRequest(upstream, this.keys, this.#o.config.defaultKey, target, seen)
    if (!plan.ok) {
      sendServiceError(reply, plan.code)
      onDone?.()
      return
    }
    if (authorization !== undefined) plan.set.push('authorization', authorization)
    const raw = request.raw
    const length = raw.headers['content-length']
    const chunked = raw.headers['transfer-encoding'] !== undefined
    const hasBody = chunked || (length !== undefined && length !== '0')
    const set = plan.set
    // The client's framing is kept where it has one: a known length goes on as it came (undici
    // checks the bytes sent against it), anything else is sent chunked.
    if (hasBody && !chunked) set.push('content-length', length!)
    const replaced =
      plan.replacesAuthorization || authorization !== undefined ? route.replacedWithAuthorization : route.replaced
    const headers = outboundRequestHeaders(raw.rawHeaders, request.headers, {
      identity: this.#identity(clientIp(request), request.id),
      host: request.host,
      proto: request.protocol,
      ownCookies: this.#sessionCookies,
      replaced,
      set,
    })
    // A function may take 150 s to its first byte: the client's socket must not be cut before.
    const socket = raw.socket
    const wanted = upstream.timeoutMs + 15_000
    if (socket.timeout !== undefined && socket.timeout > 0 && socket.timeout < wanted) socket.setTimeout(wanted)
    // The body's chunks are counted for the collector (src/services/scavenge.ts). Paused first, so
    // the counting listener does not start the flow: undici resumes the body when it sends it.
    if (hasBody) raw.pause().on('data', countRelayed)
    const relay = new StreamRelay(request, reply, route.relay, onDone)
    route.pool.dispatch(
      {
        method: request.method,
        path: plan.path,
        headers,
        body: hasBody ? raw : null,
        headersTimeout: upstream.timeoutMs,
        bodyTimeout: upstream.timeoutMs,
      },
      relay,
    )
  }

  /** The exchange of a relay ended: with the upstream's status, or an error kind. */
  #end(relay: StreamRelay, status: number | undefined, error?: BackendErrorKind): void {
    const request = relay.request
    const exchange: BackendExchange = { durationMs: performance.now() - relay.startedAt }
    if (status !== undefined) exchange.status = status
    if (error !== undefined) exchange.error = error
    recordBackend(request, exchange)
    this.#o.observer()?.(request, exchange)
  }

  #failure(relay: StreamRelay, upstream: ServiceUpstream, err: Error & { code?: string }): void {
    const { request, reply } = relay
    const code = err.code ?? ''
    const service = upstream.label
    if (relay.started) {
      this.#end(relay, reply.raw.statusCode, 'relay')
      this.#log(request, 'relay', { service, err: { code, message: err.message } }, 'relaying a service answer failed')
      reply.raw.destroy()
      return
    }
    const kind = failureKind(code)
    if (kind === 'timeout') {
      this.#end(relay, undefined, 'timeout')
      this.#log(request, `timeout:${service}`, { service }, 'service did not answer in time')
      sendServiceError(reply, 'request_timeout', `The ${service} service did not answer in time`)
      return
    }
    this.#end(relay, undefined, kind)
    this.#log(request, `${kind}:${service}`, { service, err: { code, message: err.message } }, 'service unreachable')
    // A client that sent a body the upstream never read (it failed first) is not read to the end.
    if (!request.raw.complete) reply.header('connection', 'close')
    sendServiceError(reply, 'backend_unreachable', `The ${service} service could not be reached`)
  }

  /** One line per kind and 10 s while an upstream fails the same way. */
  #log(request: FastifyRequest, kind: string, details: object, message: string): void {
    const taken = this.#errorLog.take(kind)
    if (taken.write) request.log.warn({ ...details, occurrences: taken.occurrences }, message)
  }

  async close(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((p) => p.close()))
  }
}
