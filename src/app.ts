import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { mountAuthRoutes } from './auth/mount.ts'
import type { AuthRoute } from './auth/routes.ts'
import { loadCoreConfig, type CoreConfig } from './config.ts'
import { sendError, type ErrorCode } from './errors.ts'
import { Forwarder } from './proxy/forwarder.ts'
import { validatorCompiler } from './validation.ts'
import { requestSerializer } from './log.ts'
import { createRateLimiter, loadRateLimitConfig, type RateLimitConfig, type RateLimiter } from './ratelimit/index.ts'
import { AUTH_ROUTES, DEFAULT_RATE_LIMITED, routeName } from './auth/routes.ts'
import { createRegistry, registerDocs, type RegisterDocsOptions, type RouteRegistry } from './openapi/index.ts'

export interface AuthgateOptions {
  /** Core settings; anything left out takes the documented default (the environment is not read). */
  config?: Partial<CoreConfig>
  /** `false` for silence, `true` for pino at info, or pino options. */
  logger?: boolean | Record<string, unknown>
  /** Extra Fastify server options (authgate's own take precedence where they conflict). */
  fastify?: FastifyServerOptions
  /**
   * Rate limiting (see docs/rate-limiting.md). Default: the nine routes of SEED.md §8.1 at 30/5m
   * per client, in memory. `false` turns it off.
   */
  rateLimit?: RateLimitConfig | false
  /**
   * The OpenAPI document and reference page (see docs/openapi.md): paths, info, servers, extra
   * security schemes. `{ enabled: false }` serves neither; routes are still registered.
   */
  openapi?: RegisterDocsOptions
}

/** The default rate-limit configuration, as with an empty environment. */
export function defaultRateLimitConfig(env: Record<string, string | undefined> = {}): RateLimitConfig {
  return loadRateLimitConfig(env, DEFAULT_RATE_LIMITED, AUTH_ROUTES.map(routeName))
}

declare module 'fastify' {
  interface FastifyInstance {
    authgate: { config: CoreConfig; forwarder: Forwarder; rateLimiter: RateLimiter | undefined; registry: RouteRegistry }
  }
}

/** Fastify's own errors, mapped to the gateway's codes so every error has the one shape. */
function codeForFastifyError(err: FastifyError): ErrorCode {
  if (err.validation) return 'validation_failed'
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request_entity_too_large'
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported_media_type'
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'bad_json'
  }
  if (err instanceof SyntaxError) return 'bad_json'
  const status = err.statusCode ?? 500
  if (status === 413) return 'request_entity_too_large'
  if (status === 415) return 'unsupported_media_type'
  if (status === 404) return 'not_found'
  if (status === 429) return 'over_request_rate_limit'
  if (status >= 400 && status < 500) return 'validation_failed'
  return 'unexpected_failure'
}

export function resolveConfig(partial: Partial<CoreConfig> = {}): CoreConfig {
  return { ...loadCoreConfig({}), ...partial }
}

/**
 * The authgate application: Fastify with the auth routes mounted under the prefix. Applications
 * add their own routes to the returned instance before `listen`.
 */
export async function buildApp(options: AuthgateOptions = {}): Promise<FastifyInstance> {
  const config = resolveConfig(options.config)
  const logger =
    options.logger === false || options.logger === undefined
      ? false
      : { level: config.logLevel, serializers: { req: requestSerializer }, ...(options.logger === true ? {} : options.logger) }

  const app = Fastify({
    ...options.fastify,
    logger,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustedProxies.length > 0 ? config.trustedProxies : false,
    // Raw request targets stay raw: no slash merging, no trailing-slash aliasing of backend paths.
    routerOptions: { ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, maxParamLength: 500 },
    // A malformed URL gets the standard error body too.
    frameworkErrors: (err, request, reply) => sendError(request, reply, codeForFastifyError(err as FastifyError), err.message),
  })
  app.setValidatorCompiler(validatorCompiler)
  // First, so that it hears every route: the auth routes, the docs' own, and the application's,
  // including those registered after the docs.
  const registry = options.openapi?.registry ?? createRegistry(app)

  const forwarder = new Forwarder({ backendUrl: config.backendUrl, timeoutMs: config.backendTimeoutMs, connections: config.backendConnections })
  const rateLimiter = options.rateLimit === false ? undefined : createRateLimiter(options.rateLimit ?? defaultRateLimitConfig(), app.log)
  app.decorate('authgate', { config, forwarder, rateLimiter, registry })
  app.addHook('onClose', async () => {
    await forwarder.close()
    await rateLimiter?.close()
  })
  // Waits (bounded, never throws) for Redis so the first requests are limited too.
  if (rateLimiter) await rateLimiter.ready()

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const code = codeForFastifyError(err)
    if (code === 'unexpected_failure') request.log.error({ err }, 'unhandled error')
    return sendError(request, reply, code, code === 'unexpected_failure' ? undefined : err.message)
  })
  app.setNotFoundHandler((request, reply) => sendError(request, reply, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}`))

  await app.register(async (auth) => {
    mountAuthRoutes(auth, {
      prefix: config.prefix,
      forwarder,
      bodyLimit: config.bodyLimit,
      ...(rateLimiter ? { rateLimitHook: (route: AuthRoute) => rateLimiter.hookFor(route.method, route.path) } : {}),
    })
  })

  registerDocs(app, registry, options.openapi)
  return app
}
