import { randomBytes } from 'node:crypto'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { backendAnswer } from './auth/backend-answers.ts'
import { readBodiesAsBytes, refuseUndecodable } from './auth/body.ts'
import { mountAuthRoutes, mountRootAliases, mountSessionRoute, unrouted } from './auth/mount.ts'
import { enabledRoutes, routeName } from './auth/routes/index.ts'
import {
  createClientMetadataRegistry,
  resolveClientMetadataConfig,
  type ClientMetadataConfig,
  type ClientMetadataOptions,
  type ClientMetadataRegistry,
} from './auth/client-metadata/index.ts'
import {
  backendOptions,
  CORE_OPTIONS,
  isResolvedConfig,
  resolveConfig,
  type CoreConfig,
  type CoreConfigInput,
} from './config.ts'
import { SupabaseAuthClient } from './core/backend.ts'
import { AuthgateError, codeForFastifyError, sendError } from './errors.ts'
import { registerCors } from './http/cors.ts'
import { Forwarder } from './proxy/forwarder.ts'
import { createRateLimiter, type RateLimitConfig, type RateLimiter, type RateLimitStore } from './ratelimit/index.ts'
import { autoconfirmLookup } from './ratelimit/autoconfirm.ts'
import { resolveRateLimitOptions, type RateLimitOptions } from './ratelimit/options.ts'
import { DEVICE_COOKIE } from './ratelimit/device-cookie.ts'
import { createSessionGate, documentCookieAccess, type SessionGate, type SessionOptions } from './sessions/index.ts'
import type { SessionStore } from './sessions/store.ts'
import { loadRateLimitSettings, RATE_LIMITABLE_ROUTES } from './settings.ts'
import { refuseUnknownOptions } from './config/known-options.ts'
import { authValidatorCompiler } from './validation.ts'
import { requestTypeMismatch } from './auth/go-types.ts'
import { mountConsentPage, parseConsentPagePath } from './auth/consent-page/index.ts'
import { consentTickets, type ConsentTickets } from './auth/consent-page/ticket.ts'

/** The core options the plugin itself uses; the service's own (port, timeouts of clients, health paths) are not read here. */
export type GatewayConfig = Pick<
  CoreConfig,
  | 'backendUrl'
  | 'backendApiKey'
  | 'backendTimeoutMs'
  | 'backendConnectTimeoutMs'
  | 'backendConnections'
  | 'prefix'
  | 'bodyLimit'
  | 'cacheTtlMs'
  | 'disabledGroups'
  | 'corsOrigins'
  | 'requestIdHeader'
  | 'clientIpHeader'
>

// Every key of GatewayConfig, checked complete by the type.
const GATEWAY_KEYS = Object.keys({
  backendUrl: true,
  backendApiKey: true,
  backendTimeoutMs: true,
  backendConnectTimeoutMs: true,
  backendConnections: true,
  prefix: true,
  bodyLimit: true,
  cacheTtlMs: true,
  disabledGroups: true,
  corsOrigins: true,
  requestIdHeader: true,
  clientIpHeader: true,
} satisfies Record<keyof GatewayConfig, true>)

// The plugin's own options, and what Fastify's `register` itself reads from the same object.
const PLUGIN_KEYS = Object.keys({
  config: true,
  rateLimit: true,
  rateLimitStore: true,
  sessions: true,
  sessionStore: true,
  clientMetadata: true,
  consentPage: true,
} satisfies Record<keyof AuthgatePluginOptions, true>)
const REGISTER_KEYS = ['logLevel', 'logSerializers']

/**
 * Refuses an option the plugin does not read, naming it: a misspelled or misplaced option would
 * otherwise leave its default in force without a word.
 */
export function checkPluginOptions(options: AuthgatePluginOptions): void {
  refuseUnknownOptions(options, [...PLUGIN_KEYS, ...REGISTER_KEYS], '', (key) =>
    key === 'prefix'
      ? 'the mount prefix is config.prefix (authgate is not encapsulated, so a register prefix would not apply)'
      : undefined,
  )
  // The service passes its whole resolved configuration, checked already.
  if (isResolvedConfig(options.config)) return
  refuseUnknownOptions(options.config, GATEWAY_KEYS, 'config.', (key) =>
    CORE_OPTIONS.includes(key)
      ? "is the service's option (buildApp or the environment), not the plugin's: the application's own server and logger stand for it"
      : undefined,
  )
}

export interface AuthgatePluginOptions {
  /**
   * What the plugin uses of the core options; anything left out takes the documented default (the
   * environment is not read). Checked like the environment's values: a bad value stops
   * registration with an `AuthgateConfigError` naming the option.
   */
  config?: Partial<Omit<GatewayConfig, 'backendUrl'>> & { backendUrl?: URL | string }
  /**
   * Rate limiting (docs/rate-limiting.md). Default: the sign-in and sign-up routes and MFA
   * challenge and verify at 30 per 5 minutes per client, in memory. `false` turns it off. Options
   * are the rate-limit settings in code's types (`{ rate: '10/1m', redisUrl }`), checked as the
   * environment's are; anything left out takes the documented default. A configuration the
   * service read (`RateLimitConfig`) is taken as it is.
   */
  rateLimit?: RateLimitOptions | RateLimitConfig | false
  /** Where buckets live instead of the store the rate-limit configuration selects (a custom store; a cluster worker's). */
  rateLimitStore?: RateLimitStore
  /**
   * Cookie sessions (docs/sessions.md): session answers stored by authgate and answered with an
   * HttpOnly cookie; the cookie stands for the bearer on authgate's and the application's routes.
   * Off unless given.
   */
  sessions?: SessionOptions | false
  /** Where cookie sessions live instead of the store their configuration selects (tests). */
  sessionStore?: SessionStore
  /**
   * Client ID metadata documents (docs/mcp.md): an https URL as an OAuth `client_id`, its document
   * fetched and registered at Supabase Auth as a client of its own. Off unless given.
   */
  clientMetadata?: ClientMetadataOptions | ClientMetadataConfig | false
  /**
   * authgate's own OAuth consent page (docs/mcp.md), served at `path` outside the prefix: the
   * backend's `GOTRUE_OAUTH_SERVER_AUTHORIZATION_PATH`. Off unless given.
   */
  consentPage?: { path: string } | false
}

/** What the plugin decorates the instance with, for hooks and health checks of the application. */
export interface AuthgateState {
  config: GatewayConfig
  /** The one connection to Supabase Auth (forwarding, readiness, session checks, the key set). */
  backend: SupabaseAuthClient
  forwarder: Forwarder
  rateLimiter: RateLimiter | undefined
  /** Cookie sessions, when turned on. */
  sessions: SessionGate | undefined
  /** Client ID metadata documents, when turned on: the URL ↔ backend client mapping. */
  clientMetadata: ClientMetadataRegistry | undefined
  /** authgate's consent page, when served: the tickets of the authorizations sent to it. */
  consentTickets: ConsentTickets | undefined
}

declare module 'fastify' {
  interface FastifyInstance {
    authgate: AuthgateState
  }
}

function authErrorHandler(err: FastifyError | AuthgateError, request: FastifyRequest, reply: FastifyReply) {
  // The gateway's own refusals, thrown from a hook, are rendered as they are.
  if (err instanceof AuthgateError) return sendError(request, reply, err)
  // A body Supabase Auth would refuse itself gets Supabase Auth's answer (src/auth/backend-answers.ts).
  const route = request.routeOptions.config.authRoute
  const first = err.validation?.[0]
  if (route && first && err.validationContext === 'body') {
    // A field of another JSON type fails Supabase Auth's decoding before anything else is judged.
    const mismatch = requestTypeMismatch(route, request.body, request.query)
    if (mismatch) return refuseUndecodable(request, reply, route, mismatch)
    const answer = backendAnswer(routeName(route), first as Parameters<typeof backendAnswer>[1], request.body)
    if (answer) return sendError(request, reply, answer)
  }
  const code = codeForFastifyError(err)
  if (code === 'unexpected_failure') request.log.error({ err }, 'unhandled error')
  return sendError(request, reply, code, code === 'unexpected_failure' ? undefined : err.message)
}

/** The rate-limit configuration of the options: resolved from code's options, or the service's own. */
function rateLimitConfig(given: AuthgatePluginOptions['rateLimit']): RateLimitConfig | undefined {
  if (given === false) return undefined
  if (given === undefined) return loadRateLimitSettings()
  if ('routes' in given && given.routes instanceof Map) return given as RateLimitConfig
  return resolveRateLimitOptions(given as RateLimitOptions, RATE_LIMITABLE_ROUTES)
}

/**
 * The auth routes under the prefix, with their body reader, validator, error mapping and not-found
 * answer in a context of their own: the application's routes keep Fastify's stock behaviour.
 * The plugin itself is not encapsulated (fastify-plugin), so `app.authgate` is visible to the
 * application, and so are the routes to a registry created on the instance before it.
 */
async function authgatePlugin(app: FastifyInstance, options: AuthgatePluginOptions): Promise<void> {
  checkPluginOptions(options)
  const config: GatewayConfig = resolveConfig(options.config as CoreConfigInput | undefined)
  const backend = new SupabaseAuthClient(backendOptions(config))
  const sessions = options.sessions
    ? createSessionGate(options.sessions, backend, app.log, options.sessionStore)
    : undefined
  const rateLimit = rateLimitConfig(options.rateLimit)
  const ownCookies: string[] = []
  if (sessions) ownCookies.push(sessions.sessions.config.cookieName)
  if (rateLimit?.accounts?.deviceCookie) ownCookies.push(DEVICE_COOKIE)
  const forwarder = new Forwarder({
    backend,
    cache: { defaultTtlMs: config.cacheTtlMs },
    ownCors: config.corsOrigins.length > 0,
    ownCookies,
  })
  const rateLimiter =
    rateLimit === undefined
      ? undefined
      : createRateLimiter(rateLimit, app.log, {
          ...(options.rateLimitStore ? { store: options.rateLimitStore } : {}),
          autoconfirms: autoconfirmLookup(backend),
        })
  const clientMetadata = options.clientMetadata
    ? createClientMetadataRegistry(resolveClientMetadataConfig(options.clientMetadata), backend, app.log)
    : undefined
  const consentPath = options.consentPage
    ? parseConsentPagePath('consentPage.path', options.consentPage.path)
    : undefined
  // The page's tickets are checked by whichever replica the sign-in reaches: keyed by the secret the
  // account limits already need to share (its own random one when none is set, as the limits' is).
  const consentTicketSecret = rateLimit?.accounts?.secret ?? sessions?.sessions.config.keys[0]!.key ?? randomBytes(32)
  const tickets = consentPath !== undefined ? consentTickets(consentTicketSecret, consentPath) : undefined
  app.decorate('authgate', {
    config,
    backend,
    forwarder,
    rateLimiter,
    sessions,
    clientMetadata,
    consentTickets: tickets,
  })
  // The protect hook (src/protect/hook.ts) finds the cookie sessions here.
  if (sessions) {
    app.decorate('authgateSessions', sessions)
    documentCookieAccess(app)
  }
  app.addHook('onClose', async () => {
    await backend.close()
    await rateLimiter?.close()
    await sessions?.sessions.store.close()
    await clientMetadata?.close()
  })
  // Waits (bounded, never throws) for Redis so the first requests are limited too.
  if (rateLimiter) await rateLimiter.ready()
  if (sessions && !(await sessions.sessions.store.ready(5_000)))
    app.log.warn(
      'cookie sessions: the session store is not reachable yet; requests with a session cookie get 503 until it is',
    )

  if (clientMetadata && !(await clientMetadata.ready(5_000)))
    app.log.warn(
      'client metadata: the Redis store is not reachable yet; authorizations with a document URL fail until it is',
    )

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
        ...(rateLimiter
          ? {
              rateLimitHook: (route) => rateLimiter.hookFor(route.method, route.path),
              bodyLimitHook: (route) => rateLimiter.bodyHookFor(route.method, route.path),
            }
          : {}),
        ...(sessions ? { sessions } : {}),
      })
      if (sessions) mountSessionRoute(scope, sessions)
    },
    { prefix: config.prefix },
  )
  // Outside the prefix: discovery documents where RFC 8414 §3.1 clients look for them.
  mountRootAliases(app, { prefix: config.prefix, forwarder, routes })
  if (consentPath !== undefined && tickets !== undefined)
    await mountConsentPage(app, {
      path: consentPath,
      backend,
      sessions,
      clientMetadata,
      tickets,
      signInLimit: rateLimiter?.hookFor('POST', '/token'),
      passwordSignIn: rateLimiter?.passwordSignIn,
    })
}

/**
 * authgate as a Fastify plugin: `app.register(authgate, { config: { backendUrl, prefix } })`.
 * Create the route registry (`createRegistry(app)`) before registering it to document its routes.
 */
export const authgate = fp(authgatePlugin, { name: 'authgate', fastify: '5.x' })
