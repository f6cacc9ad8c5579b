import { LIMITABLE_ROUTES } from './auth/routes/index.ts'
import { loadCoreConfig, type CoreConfig } from './config.ts'
import { AuthgateConfigError, type Env } from './config/env.ts'
import { settingValue } from './config/schema.ts'
import { httpUrl, readSetting, workerCount } from './config/values.ts'
import { loadOpenApiConfig, type OpenApiOptions } from './docs-server/config.ts'
import type { LimitableRoute } from './ratelimit/abuse-config.ts'
import { loadRateLimitConfig, type RateLimitConfig } from './ratelimit/config.ts'
import { loadSessionConfig, type SessionConfig } from './sessions/config.ts'
import { parseConsentPagePath } from './auth/consent-page/index.ts'
import { loadClientMetadataConfig, type ClientMetadataConfig } from './auth/client-metadata/index.ts'
import { loadServicesConfig, withHostedBackend, type ServicesConfig } from './services/config.ts'
import { serviceRouteKeys } from './services/table.ts'

/**
 * The service's settings, read from the environment in this one place, each through the settings
 * schema (src/config/schema.ts) that gives its default and `--help` text. The library reads no
 * environment: a plugin or `buildApp` user passes options, checked by each feature's own resolver.
 */
export interface ServiceSettings {
  core: CoreConfig
  rateLimit: RateLimitConfig
  openapi: OpenApiOptions
  workers: number
  /** AUTHGATE_PUBLIC_URL: where clients reach the auth routes (`authgate doctor` checks links against it). */
  publicUrl: string | undefined
  /** Cookie sessions; undefined when off. */
  sessions: SessionConfig | undefined
  /** The Supabase services beside Auth; undefined when none is configured. */
  services: ServicesConfig | undefined
  /** Client ID metadata documents; undefined when off. */
  clientMetadata: ClientMetadataConfig | undefined
  /** AUTHGATE_OAUTH_CONSENT_PAGE: the path of authgate's consent page; undefined when off. */
  consentPagePath: string | undefined
}

/** Every route a rate limit may name: the auth routes' table and the services' routes beside it. */
export const RATE_LIMITABLE_ROUTES: readonly LimitableRoute[] = [
  ...LIMITABLE_ROUTES,
  ...serviceRouteKeys().map((key) => ({ key, rateLimited: false })),
]

/**
 * The rate-limit settings for authgate's own route table and the service routes beside Auth
 * (`GET /rest/v1/*`; src/services/table.ts) (`{}`: the documented defaults).
 */
export function loadRateLimitSettings(env: Env = {}): RateLimitConfig {
  return loadRateLimitConfig(env, RATE_LIMITABLE_ROUTES)
}

/** AUTHGATE_WORKERS: a count, or `auto` for one per core. */
export function loadWorkerCount(env: Env = {}): number {
  return readSetting(env, 'AUTHGATE_WORKERS', workerCount)!
}

/** AUTHGATE_PUBLIC_URL, without a trailing slash. */
export function loadPublicUrl(env: Env = {}): string | undefined {
  return readSetting(env, 'AUTHGATE_PUBLIC_URL', httpUrl)
}

export function loadServiceSettings(env: Env): ServiceSettings {
  const core = loadCoreConfig(withHostedBackend(env))
  const workers = loadWorkerCount(env)
  const sessions = loadSessionConfig(env, core.corsOrigins)
  // Each worker would hold its own sessions: a cookie would work on one worker in N.
  if (sessions?.store.kind === 'memory' && workers > 1)
    throw new AuthgateConfigError(
      'AUTHGATE_SESSION_STORE',
      'with AUTHGATE_WORKERS above 1 cookie sessions need the redis store (workers do not share memory)',
    )
  const clientMetadata = loadClientMetadataConfig(env)
  // Each worker would register its own client for a document: a code issued to one worker's
  // client could not be exchanged through another's mapping.
  if (clientMetadata?.store.kind === 'memory' && workers > 1)
    throw new AuthgateConfigError(
      'AUTHGATE_OAUTH_CLIENT_METADATA',
      'with AUTHGATE_WORKERS above 1 client ID metadata documents need AUTHGATE_REDIS_URL (workers do not share memory)',
    )
  return {
    core,
    rateLimit: loadRateLimitSettings(env),
    openapi: loadOpenApiConfig(env),
    workers,
    publicUrl: loadPublicUrl(env),
    sessions,
    services: loadServicesConfig(env),
    clientMetadata,
    consentPagePath: parseConsentPagePath(
      'AUTHGATE_OAUTH_CONSENT_PAGE',
      settingValue(env, 'AUTHGATE_OAUTH_CONSENT_PAGE')!,
    ),
  }
}
