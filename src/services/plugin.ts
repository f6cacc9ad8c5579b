import cors from '@fastify/cors'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { EXPOSED_HEADERS } from '../http/cors.ts'
import { resolveServicesConfig, type ServicesConfig, type ServicesOptions, type ServiceUpstream } from './config.ts'
import type { Jwks } from '../protect/jwks.ts'
import type { RateLimitHook, RateLimitPolicy } from '../ratelimit/index.ts'
import { lazyJwks, userLimitHook } from './user-limits.ts'
import { refuseRepeatedCredentials } from './credentials.ts'
import { sendServiceError } from './errors.ts'
import { underServicePrefix } from './path.ts'
import { ServiceProxy } from './proxy.ts'
import { SERVICE_METHODS, serviceTemplate } from './table.ts'
import { relayWebSockets, SocketStats } from './websocket.ts'

/**
 * Headers a browser may read from the services' answers besides authgate's own: PostgREST's
 * counts and pagination (`Content-Range`, what supabase-js's `count` reads), Storage's and the
 * functions' downloads and redirects.
 */
export const SERVICE_EXPOSED_HEADERS = [
  'Content-Range',
  'Range-Unit',
  'Content-Location',
  'Location',
  'Content-Disposition',
  'Content-Length',
  'ETag',
  'Last-Modified',
  'Preference-Applied',
]

const METHODS: string[] = [...SERVICE_METHODS]

export interface ServicesPluginOptions {
  services: ServicesOptions | ServicesConfig
  /**
   * The app's trusted proxies (its Fastify `trustProxy` list, AUTHGATE_TRUSTED_PROXIES): the
   * socket handshake, which Fastify does not see, reads the client IP and request id as it would.
   */
  trustedProxies?: readonly string[]
}

/** What the plugin decorates the instance with (readiness and tests read it). */
export interface ServicesState {
  config: ServicesConfig
  proxy: ServiceProxy
  /** The relayed WebSockets, for the metrics. */
  sockets: SocketStats
}

declare module 'fastify' {
  interface FastifyInstance {
    authgateServices: ServicesState
  }
}

function isResolved(options: ServicesOptions | ServicesConfig): options is ServicesConfig {
  return 'upstreams' in options
}

/**
 * The Supabase services beside Auth on authgate's origin (docs/services.md): each configured row of
 * the service table (src/services/table.ts) mounted at supabase-js's path, in a context of its own
 * where request bodies are not read (they stream to the upstream) and CORS is authgate's. Registered
 * after the authgate plugin, whose request-id, client-IP, CORS and cookie settings it shares.
 */
async function servicesPlugin(app: FastifyInstance, options: ServicesPluginOptions): Promise<void> {
  const gateway = app.authgate.config
  const given = options.services
  const config = isResolved(given) ? given : resolveServicesConfig({ defaultKey: gateway.backendApiKey, ...given })
  const proxy = new ServiceProxy({
    config,
    requestIdHeader: gateway.requestIdHeader,
    clientIpHeader: gateway.clientIpHeader.toLowerCase(),
    ownCors: gateway.corsOrigins.length > 0,
    sessionCookie: app.authgate.sessions?.sessions.config.cookieName,
    sessions: app.authgate.sessions,
    observer: () => app.authgate.forwarder.observer,
  })
  const stats = new SocketStats()
  app.decorate('authgateServices', { config, proxy, sockets: stats })
  app.addHook('onClose', () => proxy.close())
  const sockets = config.upstreams.filter((u) => u.row.websocket)
  if (sockets.length > 0) relayWebSockets(app, proxy, sockets, stats, options.trustedProxies ?? [])

  await app.register(async (scope) => {
    const origins = gateway.corsOrigins
    if (origins.length > 0) {
      const any = origins.length === 1 && origins[0] === '*'
      await scope.register(cors, {
        origin: any ? '*' : [...origins],
        credentials: !any,
        methods: METHODS,
        exposedHeaders: [
          ...EXPOSED_HEADERS.filter((h) => h !== 'X-Request-Id'),
          gateway.requestIdHeader,
          ...SERVICE_EXPOSED_HEADERS,
        ],
        maxAge: 600,
        strictPreflight: false,
      })
    }
    // Bodies are never read here: the request stream itself is sent on (uploads of any size).
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null))
    // Preflights are authgate's when it answers CORS; otherwise OPTIONS goes to the service too.
    const methods = origins.length > 0 ? METHODS : [...METHODS, 'OPTIONS']
    // A repeated credential is refused first: no limit reads one copy of it while a service reads
    // another. Where the route would have no other `onRequest` hook (no limit, no CORS), the check
    // runs at the start of its handler instead: Fastify makes a hook runner per request for each
    // hook phase a route has (docs/decisions.md, D190), and no hook of authgate's runs in between.
    for (const upstream of config.upstreams) {
      const limited = limits(app, upstream, config.userLimits)
      const inHandler = limited.length === 0 && origins.length === 0
      mount(scope, proxy, upstream, methods, inHandler ? [] : [refuseRepeatedCredentials, ...limited], inHandler)
    }
  })
}

/**
 * The limits of a service's route: per client from AUTHGATE_RATE_LIMIT_ROUTES (`GET /rest/v1/*=100/1s`),
 * through the limiter the auth routes use (one store, one set of counters and metrics), then per
 * user from AUTHGATE_USER_RATE_LIMIT_ROUTES (src/services/user-limits.ts), in the same store.
 */
function limits(app: FastifyInstance, upstream: ServiceUpstream, userLimits: ReadonlyMap<string, RateLimitPolicy>) {
  const limiter = app.authgate.rateLimiter
  if (limiter === undefined) return []
  const template = serviceTemplate(upstream.row)
  const out: onRequestHookHandler[] = []
  const hooks = new Map<string, RateLimitHook>()
  for (const method of SERVICE_METHODS) {
    const hook = limiter.hookFor(method, template)
    if (hook !== undefined) hooks.set(method, hook)
  }
  if (hooks.size > 0)
    out.push(function serviceLimit(request, reply, done) {
      const hook = hooks.get(request.method)
      if (hook === undefined) return done()
      // A refusal on a service route is in the `{code, message}` shape whatever is asked (D74): the
      // limiter reads the version header for it. Only the parsed copy is changed; the request goes
      // to the service with its raw headers, unchanged.
      request.headers['x-supabase-api-version'] = '2024-01-01'
      if (hook.length === 3)
        return (hook as (r: typeof request, p: typeof reply, d: typeof done) => void)(request, reply, done)
      ;(hook as (r: typeof request, p: typeof reply) => Promise<unknown>)(request, reply).then(() => {
        if (!reply.sent) done()
      }, done)
    })
  const mine = new Map([...userLimits].filter(([key]) => key.endsWith(` ${template}`)))
  const user = userLimitHook(template, mine, limiter.store, jwksOf(app), () => app.authgate.sessions)
  if (user !== undefined) out.push(user as onRequestHookHandler)
  return out
}

const jwksByApp = new WeakMap<FastifyInstance, () => Jwks>()
function jwksOf(app: FastifyInstance): () => Jwks {
  let jwks = jwksByApp.get(app)
  if (jwks === undefined) {
    jwks = lazyJwks(() => app.authgate.backend.resolve('/.well-known/jwks.json'))
    jwksByApp.set(app, jwks)
  }
  return jwks
}

function mount(
  scope: FastifyInstance,
  proxy: ServiceProxy,
  upstream: ServiceUpstream,
  methods: string[],
  onRequest: onRequestHookHandler[],
  checksCredentials: boolean,
): void {
  const handler = proxy.handler(upstream, checksCredentials)
  const route = { method: methods, handler, schema: { hide: true }, onRequest }
  const prefix = upstream.row.prefix
  scope.route({ ...route, url: prefix })
  if (!upstream.row.exact) scope.route({ ...route, url: `${prefix}/*` })
}

/**
 * The not-found handler where authgate answers unrouted paths: a path that reads as one under a
 * mounted service's prefix but that the router did not give to it (`//rest/v1/x`, `/REST/v1/x`,
 * `/rest%2fv1/x`) is refused in the services' shape, never forwarded; anything else is `otherwise`'s.
 */
export function unroutedServicePaths(
  app: FastifyInstance,
  otherwise: (request: FastifyRequest, reply: FastifyReply) => unknown,
): (request: FastifyRequest, reply: FastifyReply) => unknown {
  const prefixes = [...new Set(app.authgateServices.config.upstreams.map((u) => u.row.prefix.toLowerCase()))]
  return (request, reply) =>
    underServicePrefix(request.raw.url ?? '', prefixes)
      ? sendServiceError(reply, 'not_found', 'The path is not one of the services as their clients spell it')
      : otherwise(request, reply)
}

/**
 * The services beside Auth as a Fastify plugin, registered after `authgate`:
 * `app.register(authgateServices, { services: { supabaseUrl: 'https://<ref>.supabase.co' } })`.
 */
export const authgateServices = fp(servicesPlugin, {
  name: 'authgate-services',
  fastify: '5.x',
  dependencies: ['authgate'],
})
