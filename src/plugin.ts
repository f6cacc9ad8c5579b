import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { backendAnswer } from './auth/backend-answers.ts'
import { readBodiesAsBytes } from './auth/body.ts'
import { mountAuthRoutes, mountRootAliases, unrouted } from './auth/mount.ts'
import { AUTH_ROUTES, DEFAULT_RATE_LIMITED, enabledRoutes, routeName } from './auth/routes/index.ts'
import { loadCoreConfig, type CoreConfig } from './config.ts'
import { codeForFastifyError, sendBackendAnswer, sendError } from './errors.ts'
import { registerCors } from './http/cors.ts'
import { Forwarder } from './proxy/forwarder.ts'
import { createRateLimiter, loadRateLimitConfig, type RateLimitConfig, type RateLimiter } from './ratelimit/index.ts'
import { authValidatorCompiler } from './validation.ts'

export interface AuthgatePluginOptions {
  /** Core settings; anything left out takes the documented default (the environment is not read). */
  config?: Partial<CoreConfig>
  /**
   * Rate limiting (docs/rate-limiting.md). Default: the sign-in and sign-up routes and MFA
   * challenge and verify at 30 per 5 minutes per client, in memory. `false` turns it off.
   */
  rateLimit?: RateLimitConfig | false
}

/** What the plugin decorates the instance with, for hooks and health checks of the application. */
export interface AuthgateState {
  config: CoreConfig
  forwarder: Forwarder
  rateLimiter: RateLimiter | undefined
}

declare module 'fastify' {
  interface FastifyInstance {
    authgate: AuthgateState
  }
}

export function resolveConfig(partial: Partial<CoreConfig> = {}): CoreConfig {
  const config = { ...loadCoreConfig({}), ...partial }
  // The shutdown deadline follows the backend timeout unless it was given.
  if (partial.shutdownTimeoutMs === undefined) config.shutdownTimeoutMs = config.backendTimeoutMs + 5000
  return config
}

/** The default rate-limit configuration, as with an empty environment. */
export function defaultRateLimitConfig(env: Record<string, string | undefined> = {}): RateLimitConfig {
  return loadRateLimitConfig(env, DEFAULT_RATE_LIMITED, AUTH_ROUTES.map(routeName))
}

function authErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  // A body Supabase Auth would refuse itself gets Supabase Auth's answer (src/auth/backend-answers.ts).
  const route = request.routeOptions.config.authRoute
  const first = err.validation?.[0]
  if (route && first && err.validationContext === 'body') {
    const answer = backendAnswer(routeName(route), first as Parameters<typeof backendAnswer>[1], request.body)
    if (answer) return sendBackendAnswer(request, reply, answer)
  }
  const code = codeForFastifyError(err)
  if (code === 'unexpected_failure') request.log.error({ err }, 'unhandled error')
  return sendError(request, reply, code, code === 'unexpected_failure' ? undefined : err.message)
}

/**
 * The auth routes under the prefix, with their body reader, validator, error mapping and not-found
 * answer in a context of their own: the application's routes keep Fastify's stock behaviour.
 * The plugin itself is not encapsulated (fastify-plugin), so `app.authgate` is visible to the
 * application, and so are the routes to a registry created on the instance before it.
 */
async function authgatePlugin(app: FastifyInstance, options: AuthgatePluginOptions): Promise<void> {
  const config = resolveConfig(options.config)
  const forwarder = new Forwarder({
    backendUrl: config.backendUrl,
    timeoutMs: config.backendTimeoutMs,
    connectTimeoutMs: config.backendConnectTimeoutMs,
    connections: config.backendConnections,
    cache: { defaultTtlMs: config.cacheTtlMs },
    apiKey: config.backendApiKey,
    requestIdHeader: config.requestIdHeader,
    ownCors: config.corsOrigins.length > 0,
  })
  const rateLimiter =
    options.rateLimit === false ? undefined : createRateLimiter(options.rateLimit ?? defaultRateLimitConfig(), app.log)
  app.decorate('authgate', { config, forwarder, rateLimiter })
  app.addHook('onClose', async () => {
    await forwarder.close()
    await rateLimiter?.close()
  })
  // Waits (bounded, never throws) for Redis so the first requests are limited too.
  if (rateLimiter) await rateLimiter.ready()

  const routes = enabledRoutes(config.disabledGroups)
  await app.register(
    async (scope) => {
      // Before the routes, so that its hooks run on each of them, ahead of the rate limit.
      await registerCors(scope, config.corsOrigins, config.requestIdHeader)
      readBodiesAsBytes(scope, config.bodyLimit)
      scope.setValidatorCompiler(authValidatorCompiler)
      scope.setErrorHandler(authErrorHandler)
      // Anything under the prefix that is not mounted is the gateway's 404 (the admin API, say).
      // Without a prefix the not-found handler would be the whole application's: leave it alone.
      // A mounted path asked with another method is 405 with `Allow`, as Supabase Auth answers.
      if (config.prefix !== '') scope.setNotFoundHandler(unrouted(routes, config.prefix))
      mountAuthRoutes(scope, {
        prefix: config.prefix,
        forwarder,
        routes,
        ...(rateLimiter ? { rateLimitHook: (route) => rateLimiter.hookFor(route.method, route.path) } : {}),
      })
    },
    { prefix: config.prefix },
  )
  // Outside the prefix: discovery documents where RFC 8414 §3.1 clients look for them.
  mountRootAliases(app, { prefix: config.prefix, forwarder, routes })
}

/**
 * authgate as a Fastify plugin: `app.register(authgate, { config: { backendUrl, prefix } })`.
 * Create the route registry (`createRegistry(app)`) before registering it to document its routes.
 */
export const authgate = fp(authgatePlugin, { name: 'authgate', fastify: '5.x' })
