import type { IncomingMessage, Server } from 'node:http'
import { performance } from 'node:perf_hooks'
import Fastify, {
  type FastifyError,
  type FastifyHttpOptions,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify'
import type { Registry } from 'prom-client'
import { AuthgateConfigError, resolveConfig, type CoreConfig, type CoreConfigInput } from './config.ts'
import { codeForFastifyError, sendError } from './errors.ts'
import { createClientErrorHandler, type ClientErrorHandler } from './http/client-errors.ts'
import { limitConnections } from './http/connection-limit.ts'
import { installEarlyRefusal, type EarlyRoute } from './http/early-refusal.ts'
import { refusedHost, requireHostHeader } from './http/host.ts'
import { checkingIntervalMs, timeoutOptions } from './http/timeouts.ts'
import { KEEP_ALIVE_BUFFER_MS, sweepConnections } from './http/connection-sweep.ts'
import { requestSerializer } from './log.ts'
import { AuthgateLogController } from './observability/log-controller.ts'
import { lazyChildLogger, lazyRequestChildren } from './observability/lazy-child-logger.ts'
import { IdleRelease } from './core/idle-release.ts'
import { Readiness, livenessHandler, readinessHandler } from './observability/health.ts'
import { WorkerMetrics } from './observability/cluster-metrics.ts'
import { createMetrics, metricsHandler, startMetricsServer, type AppMetrics } from './observability/metrics.ts'
import { newRequestId, requestIdGenerator, trustedProxyRule } from './observability/request-id.ts'
import { logEarlyAnswer, registerRequestLog, writesEarlyLine } from './observability/request-log.ts'
import type { RouteSeries } from './observability/request-series.ts'
import { registerDocs, resolveOpenApiConfig, type RegisterDocsOptions } from './docs-server/index.ts'
import { openApiAjvOptions } from './openapi/annotation-keywords.ts'
import { createRegistry } from './openapi/index.ts'
import { enabledRoutes } from './auth/routes/index.ts'
import { unrouted } from './auth/mount.ts'
import { sendServiceError } from './services/errors.ts'
import { unconfiguredService } from './services/unconfigured.ts'
import { authgate, type AuthgatePluginOptions } from './plugin.ts'
import { refuseUnknownOptions } from './config/known-options.ts'
import type { EarlyRefusal, RateLimiter } from './ratelimit/index.ts'
import type { ProtectOptions } from './protect/index.ts'
import type { ServicesConfig, ServicesOptions } from './services/config.ts'

export interface AuthgateOptions extends Omit<AuthgatePluginOptions, 'config'> {
  /**
   * Every core option (the service's as well as the plugin's); anything left out takes the
   * documented default. Checked as the environment's values are.
   */
  config?: CoreConfigInput
  /** `false` for silence, `true` for pino at info, or pino options. */
  logger?: boolean | Record<string, unknown>
  /** Extra Fastify server options (authgate's own take precedence where they conflict). */
  fastify?: FastifyServerOptions
  /**
   * The OpenAPI document and reference page (docs/openapi.md): paths, info, servers, extra
   * security schemes. `{ enabled: false }` serves neither; routes are still registered.
   */
  openapi?: RegisterDocsOptions
  /**
   * Verifying Supabase Auth's access tokens on the application's routes (see docs/protect.md); the
   * backend URL defaults to the configured one. Off unless given.
   */
  protect?: Omit<ProtectOptions, 'backendUrl'> & { backendUrl?: URL }
  /** Node.js process metrics (memory, CPU, event loop, GC) with the service's own. Default false. */
  processMetrics?: boolean
  /**
   * In a worker of the service's own cluster (AUTHGATE_WORKERS): a scrape answers for every worker,
   * from the primary (src/observability/cluster-metrics.ts). Default false.
   */
  clusterMetrics?: boolean
  /**
   * The limited routes' 429 written ahead of Fastify, with the same headers, body, log line and
   * metrics (src/http/early-refusal.ts): the service turns it on. Off by default, since an
   * application's own global hooks would not see those refusals. Default false.
   */
  refuseEarly?: boolean
  /**
   * Where the spans go when tracing is on (AUTHGATE_TRACING=otlp, or this given): an OpenTelemetry
   * `SpanExporter` of the application's own, e.g. an in-memory one in tests. By default OTLP/HTTP.
   */
  tracing?: { exporter?: import('@opentelemetry/sdk-trace').SpanExporter }
  /**
   * Every path nothing is routed at (`GET /`, a typo) answered with authgate's error body, 404 or
   * 405 with `Allow` on an auth route's path, as under the prefix: the service turns it on. Off by
   * default, since the not-found handler at the root is the application's to set. Default false.
   */
  answerUnrouted?: boolean
  /**
   * The Supabase services beside Auth on the same origin (docs/services.md): hosted Supabase's
   * project URL or each self-hosted service's, and the project's keys. Off unless given.
   */
  services?: ServicesOptions | ServicesConfig | undefined
}

// Every key of AuthgateOptions, checked complete by the type.
const APP_OPTIONS = Object.keys({
  config: true,
  rateLimit: true,
  rateLimitStore: true,
  sessions: true,
  sessionStore: true,
  logger: true,
  fastify: true,
  openapi: true,
  protect: true,
  processMetrics: true,
  clusterMetrics: true,
  refuseEarly: true,
  tracing: true,
  answerUnrouted: true,
  services: true,
  clientMetadata: true,
  consentPage: true,
} satisfies Record<keyof AuthgateOptions, true>)

/** What the service adds around the plugin: readiness (turned off first on shutdown) and the metrics. */
export interface AuthgateService {
  readiness: Readiness
  metrics: Registry
  /** The metrics listener when AUTHGATE_METRICS_PORT is set (its port once listening). */
  metricsPort(): number | undefined
}

declare module 'fastify' {
  interface FastifyInstance {
    authgateService: AuthgateService
  }
}

/** The Fastify server options the service runs with, for a given configuration. */
export function serverOptions(config: CoreConfig, options: AuthgateOptions = {}): FastifyHttpOptions<Server> {
  const logger =
    options.logger === false || options.logger === undefined
      ? false
      : {
          level: config.logLevel,
          serializers: { req: requestSerializer },
          ...(options.logger === true ? {} : options.logger),
        }
  return {
    ...options.fastify,
    // The application's routes may carry OpenAPI's annotation keywords (`example`, ...).
    ajv: openApiAjvOptions(options.fastify?.ajv).ajv,
    ...timeoutOptions(config),
    logger,
    // A request's child logger is made on its first line (most requests write none at `warn`).
    ...(logger === false ? {} : { childLoggerFactory: options.fastify?.childLoggerFactory ?? lazyChildLogger }),
    // One line per request, written by src/observability/request-log.ts.
    logController: new AuthgateLogController(),
    // The id comes from a trusted proxy's header or is generated (never `req-1`, `req-2`, ...).
    requestIdHeader: false,
    genReqId: requestIdGenerator(config.requestIdHeader, config.trustedProxies),
    // Malformed requests and slow clients: authgate's error body, `Connection: close`, a log line.
    clientErrorHandler: createClientErrorHandler(config.requestIdHeader, {
      keepUnused: true,
    }),
    // The client IP the forwarder sends and the limiter keys on comes from Fastify's `request.ips`
    // (src/proxy/client-ip.ts); each address is judged on its normalised form (`IP:port` too).
    trustProxy: config.trustedProxies.length > 0 ? trustedProxyRule(config.trustedProxies) : false,
    // Raw request targets stay raw: no slash merging, no trailing-slash aliasing of backend paths;
    // passkey ids can be long.
    routerOptions: { ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, maxParamLength: 500 },
    // A URL Fastify cannot route (a malformed escape) gets the gateway's error body too.
    frameworkErrors: (err, request, reply) =>
      sendError(request, reply, codeForFastifyError(err as FastifyError), err.message),
  }
}

/** A GET route at `path`, or a configuration error naming `variable` when something is there already. */
function claimPath(app: FastifyInstance, variable: string, path: string): void {
  if (app.hasRoute({ method: 'GET', url: path }))
    throw new AuthgateConfigError(variable, `${path} is already a route (an auth route or another setting's path)`)
}

/**
 * The authgate service: `Fastify()` with the authgate plugin, liveness and readiness, metrics, one
 * log line per request, and the documentation. Applications add their own routes to the returned
 * instance before `listen`; those keep Fastify's stock behaviour.
 */
export async function buildApp(options: AuthgateOptions = {}): Promise<FastifyInstance> {
  refuseUnknownOptions(options, APP_OPTIONS)
  const config = resolveConfig(options.config)
  const keywords = openApiAjvOptions(options.fastify?.ajv)
  const server = { ...serverOptions(config, options), ajv: keywords.ajv }
  // A request's logger made on its first line by the service's logger itself rather than by a
  // `childLoggerFactory`, whose every child Fastify checks (src/observability/lazy-child-logger.ts).
  const lazyRequests = server.childLoggerFactory === lazyChildLogger
  if (lazyRequests) delete server.childLoggerFactory
  const app = Fastify(server)
  if (lazyRequests) lazyRequestChildren(app.log, server.requestIdLogLabel ?? 'reqId')
  const connectionLimit = limitConnections(app, config.maxConnections)
  // A connection without a request for the keep-alive and header timeouts is closed, stray bytes
  // or not; closing the service closes every connection with no request in progress (D187, D188).
  // Node.js closes an idle keep-alive connection a second after the timeout it advertises: the
  // bound leaves it that second, so that an idle connection is closed by Node.js, not counted here.
  const connectionSweep = sweepConnections(app.server, {
    quietLimitMs: config.keepAliveTimeoutMs + KEEP_ALIVE_BUFFER_MS + config.headerTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    intervalMs: checkingIntervalMs(config),
    log: () => app.log,
  })
  // Before any route: each `x-*` keyword of an application's route is declared to Ajv.
  keywords.collect(app)
  // First, so that it hears every route: the auth routes, the docs' own, and the application's,
  // including those registered after the docs.
  const registry = options.openapi?.registry ?? createRegistry(app)
  await app.register(authgate, {
    config,
    ...(options.rateLimit !== undefined ? { rateLimit: options.rateLimit } : {}),
    ...(options.rateLimitStore !== undefined ? { rateLimitStore: options.rateLimitStore } : {}),
    ...(options.sessions !== undefined ? { sessions: options.sessions } : {}),
    ...(options.clientMetadata !== undefined ? { clientMetadata: options.clientMetadata } : {}),
    ...(options.consentPage !== undefined ? { consentPage: options.consentPage } : {}),
    ...(options.sessionStore !== undefined ? { sessionStore: options.sessionStore } : {}),
  })
  const { backend, forwarder, rateLimiter } = app.authgate
  if (options.services !== undefined) {
    // Loaded on demand: an Auth-only gateway never reads the services' code.
    const { authgateServices } = await import('./services/plugin.ts')
    await app.register(authgateServices, { services: options.services, trustedProxies: config.trustedProxies })
  }
  // Every answer names its request id, so a client's report can be matched to the log line; and
  // a request's Host is checked (src/http/host.ts) before anything else of it is.
  const idHeader = config.requestIdHeader
  if (config.corsOrigins.length === 0 && server.logController instanceof AuthgateLogController) {
    // From the log controller, ahead of the `onRequest` hooks, where a global hook would make
    // Fastify run a hook phase on every route that has no other `onRequest` hook (D171). With CORS
    // on, the auth routes have that phase anyway, and a preflight is answered by CORS's hook before
    // these run: they stay hooks, in the same order.
    server.logController.onIncoming((request, reply) => {
      reply.header(idHeader, request.id)
      refusedHost(request, reply)
    })
  } else {
    // Callback style: Fastify runs it without a promise and a microtask (each 429 of a flood passes here).
    app.addHook('onRequest', (request, reply, done) => {
      reply.header(idHeader, request.id)
      done()
    })
    requireHostHeader(app)
  }

  const quiet = new Set<string>()
  const readiness = new Readiness({
    backend,
    rateLimiter,
    followDependencies: config.readinessFollowsDependencies,
    log: app.log,
  })
  if (app.hasDecorator('authgateServices')) {
    const { serviceProbes } = await import('./services/readiness.ts')
    const { proxy, config: services } = app.authgateServices
    for (const [name, probe] of serviceProbes(proxy, services.upstreams)) readiness.watch(name, probe)
  }
  app.addHook('onListen', async () => readiness.start())
  app.addHook('onClose', () => readiness.close())
  // Connections that have sent nothing or part of a head are not idle to Node.js, and would hold the close (D188).
  const clientErrors = server.clientErrorHandler as ClientErrorHandler
  app.addHook('preClose', (done) => {
    connectionSweep.closeUnasked()
    done()
  })
  // Memory a load grew is given back once the process is idle again (src/core/idle-release.ts).
  const idleRelease = new IdleRelease()
  app.addHook('onListen', async () => idleRelease.start())
  app.addHook('onClose', async () => idleRelease.stop())
  const hidden = { schema: { hide: true } }
  if (config.livenessPath !== false) {
    claimPath(app, 'AUTHGATE_LIVENESS_PATH', config.livenessPath)
    app.get(config.livenessPath, hidden, livenessHandler())
    quiet.add(config.livenessPath)
  }
  if (config.readinessPath !== false) {
    claimPath(app, 'AUTHGATE_READINESS_PATH', config.readinessPath)
    app.get(config.readinessPath, hidden, readinessHandler(readiness))
    quiet.add(config.readinessPath)
  }

  // With a logger, the metrics and the request's line are written from the log controller, not
  // from `onResponse` hooks (src/observability/log-controller.ts, D150).
  const completion =
    server.logger !== false && server.logController instanceof AuthgateLogController ? server.logController : undefined
  const metrics = createMetrics(app, {
    completion,
    rateLimiter,
    readiness,
    processMetrics: options.processMetrics ?? false,
    clientErrors: clientErrors.counts,
    connectionLimit,
    connectionSweep,
  })
  forwarder.observer = metrics.observeBackend
  if (app.hasDecorator('authgateServices')) {
    const { registerSocketMetrics } = await import('./services/metrics.ts')
    const { sockets, config: services } = app.authgateServices
    const relayed = services.upstreams.filter((u) => u.row.websocket).map((u) => u.label)
    if (relayed.length > 0) registerSocketMetrics(metrics.registry, sockets, relayed)
  }
  if (config.tracing === 'otlp' || options.tracing?.exporter !== undefined) {
    // Loaded on demand: the OpenTelemetry packages are only needed where traces are made.
    const { installTracing } = await import('./observability/tracing.ts')
    forwarder.tracer = await installTracing(app, {
      ...(options.tracing?.exporter !== undefined ? { exporter: options.tracing.exporter } : {}),
      trustedProxies: config.trustedProxies,
      backendHost: backend.url.host,
    })
  }
  const scrape = options.clusterMetrics ? new WorkerMetrics(metrics.registry) : metrics.registry
  if (scrape instanceof WorkerMetrics) app.addHook('onClose', async () => scrape.close())
  let metricsPort: number | undefined
  if (config.metricsPath !== false && config.metricsPort === undefined) {
    claimPath(app, 'AUTHGATE_METRICS_PATH', config.metricsPath)
    app.get(config.metricsPath, hidden, metricsHandler(scrape))
    quiet.add(config.metricsPath)
  } else if (config.metricsPath !== false && config.metricsPort !== undefined) {
    const path = config.metricsPath
    const port = config.metricsPort
    let stop: (() => Promise<void>) | undefined
    // onReady, not onListen: listen() resolves only once the metrics listener is up too.
    app.addHook('onReady', async () => {
      const started = await startMetricsServer(scrape, { port, host: config.metricsHost, path })
      stop = started.close
      metricsPort = started.port
    })
    app.addHook('onClose', async () => stop?.())
  }
  registerRequestLog(app, { quietPaths: quiet, completion })
  app.decorate('authgateService', { readiness, metrics: metrics.registry, metricsPort: () => metricsPort })

  if (options.openapi?.enabled !== false) {
    const docs = resolveOpenApiConfig(options.openapi)
    claimPath(app, 'AUTHGATE_OPENAPI_PATH', docs.openapiPath)
    if (docs.openapi30Path !== false) claimPath(app, 'AUTHGATE_OPENAPI30_PATH', docs.openapi30Path)
    if (docs.docsPath !== false) claimPath(app, 'AUTHGATE_DOCS_PATH', docs.docsPath)
  }
  if (options.protect) {
    // Loaded on demand: the JOSE library is only needed where tokens are verified.
    const { authgateProtect } = await import('./protect/index.ts')
    await app.register(authgateProtect, { backend, ...options.protect })
    // Tokens cannot be verified before the signing keys are known: not ready until the first fetch.
    const jwks = app.authgateProtect?.verifier.jwks
    if (jwks) readiness.require('signing_keys', () => jwks.load())
  }
  if (options.refuseEarly && rateLimiter) refuseEarly(app, config, rateLimiter, metrics)
  if (options.answerUnrouted) {
    const otherwise = unrouted(enabledRoutes(config.disabledGroups), config.prefix)
    const mounted = new Set(
      app.hasDecorator('authgateServices') ? app.authgateServices.config.upstreams.map((u) => u.row.name) : [],
    )
    const auth = (request: FastifyRequest, reply: FastifyReply) => {
      const target = (request.raw.url ?? '').split('?')[0]!
      const why = unconfiguredService(target, mounted)
      if (why === undefined) return otherwise(request, reply)
      // In the services' shape, whatever the request asks (D74): their clients read `message`.
      return sendServiceError(reply, 'not_found', `No route for ${request.method} ${target}: ${why}`)
    }
    if (!app.hasDecorator('authgateServices')) app.setNotFoundHandler(auth)
    else app.setNotFoundHandler((await import('./services/plugin.ts')).unroutedServicePaths(app, auth))
  }
  registerDocs(app, registry, options.openapi, await restDocument(app, options))
  return app
}

/**
 * PostgREST's description of the tables in the document when the REST service is mounted
 * (src/services/rest-document.ts): first fetched while the app gets ready (for at most 2 s: a
 * PostgREST still starting does not hold authgate), then on its refresh interval.
 */
async function restDocument(app: FastifyInstance, options: AuthgateOptions) {
  if (!app.hasDecorator('authgateServices') || options.openapi?.enabled === false) return undefined
  const { proxy, config } = app.authgateServices
  const rest = config.upstreams.find((u) => u.row.name === 'rest')
  if (rest === undefined || config.restDocumentRefreshMs === false) return undefined
  const { RestDocument } = await import('./services/rest-document.ts')
  const doc = new RestDocument({ proxy, upstream: rest, refreshMs: config.restDocumentRefreshMs, log: app.log })
  app.addHook('onReady', async () => {
    await Promise.race([doc.start(), new Promise((resolve) => setTimeout(resolve, 2000).unref())])
  })
  app.addHook('onClose', async () => doc.stop())
  return doc
}

/**
 * The limited routes' 429 ahead of Fastify (src/http/early-refusal.ts), where it is exactly the
 * route's own answer: a synchronous store, the socket's address as the client IP (no trusted
 * proxies), no CORS headers to add. Routes with parameters are left to their hook.
 */
function refuseEarly(app: FastifyInstance, config: CoreConfig, rateLimiter: RateLimiter, metrics: AppMetrics): void {
  if (config.trustedProxies.length > 0 || config.corsOrigins.length > 0) return
  // Each route with its series, resolved here once: the refusal counts with an increment.
  const routes: Array<EarlyRoute & { series: RouteSeries }> = []
  for (const route of enabledRoutes(config.disabledGroups)) {
    if (route.path.includes('{')) continue
    const decide = rateLimiter.earlyDeciderFor(route.method, route.path)
    const url = `${config.prefix}${route.path}`
    if (decide) routes.push({ method: route.method, url, decide, series: metrics.requestSeries(url, route.method) })
  }
  // Whether a refusal gets a line, asked of the logger once and again whenever its level changes
  // (pino says so with `level-change`; a logger that cannot change its level has no `on`): asking
  // on every refusal read the level through two of pino's getters and the label table, about
  // 1 k instructions a refusal (docs/decisions.md, D215).
  const log = app.log
  let writesLine = writesEarlyLine(log, 429)
  const levels = log as FastifyInstance['log'] & { on?: (event: 'level-change', listener: () => void) => unknown }
  if (typeof levels.on === 'function') levels.on('level-change', () => (writesLine = writesEarlyLine(log, 429)))
  installEarlyRefusal(app.server, {
    routes,
    requestIdHeader: config.requestIdHeader,
    // Without trusted proxies (above) the id is always a fresh one, as genReqId would give.
    requestId: newRequestId,
    onRefused(req, route, id, ip, startedAt, refusal) {
      const ms = performance.now() - startedAt
      route.series.observe(429, ms / 1000)
      if (writesLine) logEarlyRefusal(log, req, route, id, ip, ms, refusal)
    },
  })
}

/**
 * The line of an early 429, where the level writes one (not at the usual level). Apart from
 * `onRefused`: V8 moves a function to its optimising compiler by the share of its bytecode that
 * runs, so with the line's fields in it, `onRefused` ran half of its bytecode per refusal and was
 * compiled by TurboFan only after 20,000–25,000 refusals (docs/decisions.md, D200).
 */
function logEarlyRefusal(
  log: FastifyInstance['log'],
  req: IncomingMessage,
  route: EarlyRoute,
  id: string,
  ip: string,
  ms: number,
  refusal: EarlyRefusal,
): void {
  logEarlyAnswer(log, req, {
    reqId: id,
    method: route.method,
    route: route.url,
    status: 429,
    durationMs: ms,
    ip,
    code: refusal.code,
    body: refusal.body,
  })
}
