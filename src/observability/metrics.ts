import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { unreadableAddresses } from '../core/client-address.ts'
import type { RateLimiter } from '../ratelimit/index.ts'
import type { BackendExchange } from '../core/backend-timing.ts'
import type { MetricsSource } from './cluster-metrics.ts'
import type { Readiness } from './health.ts'
import type { ResponseCompletion } from './log-controller.ts'
import { RequestSeries, type RouteSeries } from './request-series.ts'
import { routeUrl } from './route-url.ts'

// Not `import { createServer } from 'node:http'`: an ESM import of node:http reads every export,
// including its lazy WebSocket getters, which load Node.js's bundled undici (about 13 MB resident).
const { createServer } = process.getBuiltinModule('node:http')

export interface MetricsOptions {
  rateLimiter?: RateLimiter | undefined
  /** Source of `authgate_dependency_up`. */
  readiness?: Readiness | undefined
  /** Node.js process metrics (CPU, memory, event-loop lag, GC) too: the service wants them, tests not. */
  processMetrics?: boolean
  /** The client-error handler's counts, by `error\treason` (src/http/client-errors.ts). */
  clientErrors?: ReadonlyMap<string, number>
  /** Connections closed by AUTHGATE_MAX_CONNECTIONS (src/http/connection-limit.ts). */
  connectionLimit?: { readonly dropped: number }
  /** Connections closed without a request, by reason (src/http/connection-sweep.ts). */
  connectionSweep?: { readonly closed: Readonly<Record<string, number>> }
  /** Where each finished response is observed instead of an `onResponse` hook (src/observability/log-controller.ts). */
  completion?: ResponseCompletion | undefined
}

/** Seconds; Supabase Auth answers in milliseconds to a second, bcrypt-bound sign-ins near 100 ms. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20]

/**
 * The Prometheus metrics of one app, in a registry of its own (several apps in one process, as in
 * tests, never share counters). Route labels are route templates (`/auth/passkeys/:id`), never raw
 * URLs, so their number is bounded; a request no route matched is `route=""`.
 */
export interface AppMetrics {
  registry: Registry
  /** The forwarder's observer: backend latency and errors, once per exchange. */
  observeBackend(request: FastifyRequest, exchange: BackendExchange): void
  /**
   * The answered requests of a route template and method, for a path that answers without Fastify
   * (the early refusal) and resolves its series once; the hook records Fastify's answers.
   */
  requestSeries(route: string, method: string): RouteSeries
}

export function createMetrics(app: FastifyInstance, options: MetricsOptions = {}): AppMetrics {
  const registry = new Registry()
  if (options.processMetrics) collectDefaultMetrics({ register: registry })

  const requests = new RequestSeries(
    registry,
    {
      requests: {
        name: 'authgate_http_requests_total',
        help: 'Requests answered, by route template, method and status',
      },
      duration: {
        name: 'authgate_http_request_duration_seconds',
        help: 'Time from the request to the end of the response, by route template and method',
      },
    },
    BUCKETS,
  )
  // A series per route and status, resolved by two map lookups: no label hashing per request.
  const backendDuration = new RequestSeries(
    registry,
    {
      duration: {
        name: 'authgate_backend_request_duration_seconds',
        help: 'Time Supabase Auth took to answer (to the response head), by route template and status',
      },
    },
    BUCKETS,
    'status',
  )
  const backendErrors = new Counter({
    name: 'authgate_backend_errors_total',
    help: 'Backend requests that failed, by kind: unreachable, connect_timeout, timeout, relay, bad_header, failed',
    labelNames: ['kind'] as const,
    registers: [registry],
  })
  for (const kind of ['unreachable', 'connect_timeout', 'timeout', 'relay', 'bad_header', 'failed'])
    backendErrors.inc({ kind }, 0)

  const clientErrors = options.clientErrors
  if (clientErrors !== undefined) {
    // Requests refused before they became requests (timeouts, oversized or malformed heads): no
    // route, so not in authgate_http_requests_total. The handler counts; the metric follows.
    const seen = new Map<string, number>()
    const counter = new Counter({
      name: 'authgate_client_errors_total',
      help: 'Connections answered before routing, by error (client_timeout, request_header_too_large, malformed_request) and Node.js reason (HPE_*, ERR_HTTP_REQUEST_TIMEOUT)',
      labelNames: ['error', 'reason'] as const,
      registers: [registry],
      collect() {
        for (const [key, count] of clientErrors) {
          const [error, reason] = key.split('\t') as [string, string]
          this.inc({ error, reason }, count - (seen.get(key) ?? 0))
          seen.set(key, count)
        }
      },
    })
    // The two with one reason each are there from the start; a malformed request's reason varies.
    counter.inc({ error: 'client_timeout', reason: 'ERR_HTTP_REQUEST_TIMEOUT' }, 0)
    counter.inc({ error: 'request_header_too_large', reason: 'HPE_HEADER_OVERFLOW' }, 0)
  }

  const connectionLimit = options.connectionLimit
  if (connectionLimit !== undefined) {
    let seen = 0
    new Counter({
      name: 'authgate_connections_dropped_total',
      help: 'Client connections closed on arrival because AUTHGATE_MAX_CONNECTIONS were open',
      registers: [registry],
      collect() {
        this.inc(connectionLimit.dropped - seen)
        seen = connectionLimit.dropped
      },
    })
  }

  const connectionSweep = options.connectionSweep
  if (connectionSweep !== undefined) {
    const seen: Record<string, number> = {}
    const counter = new Counter({
      name: 'authgate_connections_closed_without_request_total',
      help: 'Client connections closed with no request for AUTHGATE_KEEP_ALIVE_TIMEOUT + 1 s + AUTHGATE_HEADER_TIMEOUT, by reason: never_asked (no request ever: an unused preconnect, a silent-connection flood), stray_bytes (bytes that began no request held an idle one open)',
      labelNames: ['reason'] as const,
      registers: [registry],
      collect() {
        for (const [reason, count] of Object.entries(connectionSweep.closed)) {
          this.inc({ reason }, count - (seen[reason] ?? 0))
          seen[reason] = count
        }
      },
    })
    for (const reason of Object.keys(connectionSweep.closed)) counter.inc({ reason }, 0)
  }

  {
    // Counted per process where the address is derived (src/core/client-address.ts); from this
    // registry's start.
    let seen = unreadableAddresses.count
    new Counter({
      name: 'authgate_client_address_unreadable_total',
      help: 'Forwarded client addresses that were no IP address (after dropping ports, brackets, zone ids): the trusted proxy’s own address stood in for them',
      registers: [registry],
      collect() {
        this.inc(unreadableAddresses.count - seen)
        seen = unreadableAddresses.count
      },
    })
  }

  const limiter = options.rateLimiter
  if (limiter !== undefined) {
    // The limiter keeps its own counters; the metric follows them at each scrape.
    const seen = { allowed: 0, denied: 0, failedOpen: 0, failedClosed: 0 }
    new Counter({
      name: 'authgate_rate_limit_decisions_total',
      help: 'Rate-limit decisions: allowed, denied, and while the store failed, failed_open or failed_closed',
      labelNames: ['decision'] as const,
      registers: [registry],
      collect() {
        const c = limiter.counters
        this.inc({ decision: 'allowed' }, c.allowed - seen.allowed)
        this.inc({ decision: 'denied' }, c.denied - seen.denied)
        this.inc({ decision: 'failed_open' }, c.failedOpen - seen.failedOpen)
        this.inc({ decision: 'failed_closed' }, c.failedClosed - seen.failedClosed)
        Object.assign(seen, {
          allowed: c.allowed,
          denied: c.denied,
          failedOpen: c.failedOpen,
          failedClosed: c.failedClosed,
        })
      },
    })
    // Which limit answered, where: client (per IP), account, and the e-mail and SMS budgets (and a
    // client's share of them). Route and limit only: never who.
    const deniedSeen = new Map<string, number>()
    new Counter({
      name: 'authgate_rate_limit_denied_total',
      help: 'Requests refused by a limit, by limit (client, account, account_device, email_budget, email_budget_client, sms_budget, sms_budget_client) and route',
      labelNames: ['limit', 'route'] as const,
      registers: [registry],
      collect() {
        for (const [key, count] of limiter.counters.deniedBy) {
          const [limit, route] = key.split('\t') as [string, string]
          this.inc({ limit, route }, count - (deniedSeen.get(key) ?? 0))
          deniedSeen.set(key, count)
        }
      },
    })
    const store = limiter.store
    const status = store.status?.bind(store)
    if (status) {
      new Gauge({
        name: 'authgate_redis_up',
        help: '1 while the rate-limit Redis connection is ready, else 0',
        registers: [registry],
        collect() {
          this.set(status() === 'up' ? 1 : 0)
        },
      })
    }
  }

  const readiness = options.readiness
  if (readiness !== undefined) {
    new Gauge({
      name: 'authgate_dependency_up',
      help: '1 while a dependency answers (supabase_auth: GET /health below 500; redis: connection ready), else 0',
      labelNames: ['dependency'] as const,
      aggregator: 'min',
      registers: [registry],
      async collect() {
        for (const [dependency, up] of Object.entries(await readiness.dependencies()))
          this.set({ dependency }, up ? 1 : 0)
      },
    })
  }

  const observe = (request: FastifyRequest, reply: FastifyReply) =>
    requests.of(routeUrl(request) ?? '', request.method).observe(reply.statusCode, reply.elapsedTime / 1000)
  if (options.completion !== undefined) options.completion.onCompleted(observe)
  else
    // Callback style: no promise and microtask per request.
    app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
      observe(request, reply)
      done()
    })
  return {
    registry,
    requestSeries: (route, method) => requests.of(route, method),
    observeBackend(request, exchange) {
      const route = routeUrl(request) ?? ''
      if (exchange.error !== undefined) backendErrors.inc({ kind: exchange.error })
      // A relay failure has already been timed at its response head.
      if (exchange.error === 'relay') return
      backendDuration
        .of(route, exchange.status === undefined ? 'none' : String(exchange.status))
        .time(exchange.durationMs / 1000)
    },
  }
}

/** The metrics on a listener of their own (AUTHGATE_METRICS_PORT): kept off the public port. */
export async function startMetricsServer(
  registry: MetricsSource,
  options: { port: number; host: string; path: string },
): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (req.method !== 'GET' || path !== options.path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
      return
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(text),
      () => res.writeHead(500).end(),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => resolve())
  })
  const address = server.address()
  return {
    port: typeof address === 'object' && address !== null ? address.port : options.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** The scrape route: the registry in Prometheus text format. */
export function metricsHandler(registry: MetricsSource) {
  return async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('content-type', registry.contentType)
    reply.header('cache-control', 'no-store')
    return registry.metrics()
  }
}
