import { normaliseBackendUrl } from '../core/backend.ts'
import { refuseUnknownOptions } from '../config/known-options.ts'
import { AuthgateConfigError, envValue, isOff, type Env } from '../config/env.ts'
import { boolean, duration, integer, list, readSetting, text, type SettingValue } from '../config/values.ts'
import type { RateLimitPolicy } from '../ratelimit/index.ts'
import { parseUserLimits } from './user-limits.ts'
import { SERVICE_TABLE, type ServiceName, type ServiceRow, type ServiceUrlSetting } from './table.ts'

/** The self-hosted services by the name their URL option carries (GraphQL is REST's PostgREST). */
export type UpstreamName = 'rest' | 'storage' | 'functions' | 'realtime' | 'meta'

const URL_SETTINGS: Record<UpstreamName, ServiceUrlSetting> = {
  rest: 'AUTHGATE_REST_URL',
  storage: 'AUTHGATE_STORAGE_URL',
  functions: 'AUTHGATE_FUNCTIONS_URL',
  realtime: 'AUTHGATE_REALTIME_URL',
  meta: 'AUTHGATE_META_URL',
}

/** The project's keys: the legacy JWTs the upstreams check, and the new keys that stand for them. */
export interface ServiceKeys {
  /** The legacy anon JWT. */
  anon?: string | undefined
  /** The legacy service-role JWT. */
  service?: string | undefined
  /** `sb_publishable_…` keys, translated to `anon`. */
  publishable?: readonly string[]
  /** `sb_secret_…` keys, translated to `service`. */
  secret?: readonly string[]
}

/** The keys once checked: each list present, the legacy keys possibly absent. */
export interface ResolvedKeys {
  anon: string | undefined
  service: string | undefined
  publishable: readonly string[]
  secret: readonly string[]
}

/** What code may pass (`buildApp({ services })`): the environment's settings as options. */
export interface ServicesOptions {
  /** Hosted Supabase (`https://<ref>.supabase.co`): every hosted service at its usual path. */
  supabaseUrl?: URL | string | undefined
  /** Self-hosted upstreams, each overriding the hosted one. */
  urls?: Partial<Record<UpstreamName, URL | string>>
  /** The `Host` Realtime gets (its first label names the tenant). */
  realtimeTenant?: string | undefined
  keys?: ServiceKeys
  /**
   * The key a request without one is sent with (default: the plugin's `backendApiKey`, hosted
   * Supabase's publishable key), so browsers need none.
   */
  defaultKey?: string | undefined
  /** Per-service timeouts in place of the table's (30 s, functions 150 s, the socket's idle 60 s). */
  timeoutsMs?: Partial<Record<ServiceName, number>>
  /** Time to open a connection to a service. Default 5 s. */
  connectTimeoutMs?: number
  /** Most keep-alive connections per service origin. Default 128. */
  connections?: number
  /**
   * How often PostgREST's description of the tables is fetched again for the document (docs/services.md);
   * `false`: it is not fetched and the document describes authgate's routes only. Default 5 minutes.
   */
  restDocumentRefreshMs?: number | false
  /**
   * Per-user rates on the service routes (`GET /rest/v1/*=600/1m`, the syntax of
   * AUTHGATE_RATE_LIMIT_ROUTES), the user being the verified `sub` of the access token.
   */
  userRateLimitRoutes?: string | undefined
  /**
   * Storage's answers carry `X-Content-Type-Options: nosniff` and `Content-Security-Policy: sandbox`
   * (not on PDFs), so an uploaded HTML or SVG file runs no script on authgate's origin. `false` only
   * where Storage's files are served from an origin of their own. Default true.
   */
  storageSandbox?: boolean
}

/** One mounted service: its row and where its requests go. */
export interface ServiceUpstream {
  row: ServiceRow
  /** `http(s)://host:port` of the upstream. */
  origin: string
  /** The path that replaces the row's prefix (base path of the URL, then the row's upstream path). */
  basePath: string
  /** The `Host` sent in place of the origin's, when one is configured (Realtime's tenant). */
  host: string | undefined
  timeoutMs: number
  /** The upstream's name in metrics, logs and readiness. */
  label: ServiceName
  /** A self-hosted upstream (its own URL): the row's rewrites apply; hosted Supabase's gateway does them itself. */
  selfHosted: boolean
  /** Its answers are users' files made inert on authgate's origin (src/services/user-content.ts). */
  inert: boolean
}

export interface ServicesConfig {
  upstreams: ServiceUpstream[]
  /** undefined when no key is configured: keys pass unchecked and untranslated (the upstreams judge). */
  keys: ResolvedKeys | undefined
  defaultKey: string | undefined
  connectTimeoutMs: number
  connections: number
  restDocumentRefreshMs: number | false
  /** Per-user policies by `METHOD /path` (empty: none). */
  userLimits: Map<string, RateLimitPolicy>
}

const OPTION_NAMES = {
  supabaseUrl: 'services.supabaseUrl',
  url: (name: UpstreamName) => `services.urls.${name}`,
  realtimeTenant: 'services.realtimeTenant',
  anon: 'services.keys.anon',
  service: 'services.keys.service',
  publishable: 'services.keys.publishable',
  secret: 'services.keys.secret',
  userLimits: 'services.userRateLimitRoutes',
}

const ENV_NAMES: typeof OPTION_NAMES = {
  supabaseUrl: 'AUTHGATE_SUPABASE_URL',
  url: (name) => URL_SETTINGS[name],
  realtimeTenant: 'AUTHGATE_REALTIME_TENANT',
  anon: 'AUTHGATE_ANON_KEY',
  service: 'AUTHGATE_SERVICE_ROLE_KEY',
  publishable: 'AUTHGATE_PUBLISHABLE_KEYS',
  secret: 'AUTHGATE_SECRET_KEYS',
  userLimits: 'AUTHGATE_USER_RATE_LIMIT_ROUTES',
}

// Every key of ServicesOptions, checked complete by the type.
const SERVICES_OPTION_KEYS = Object.keys({
  supabaseUrl: true,
  urls: true,
  realtimeTenant: true,
  keys: true,
  defaultKey: true,
  timeoutsMs: true,
  connectTimeoutMs: true,
  connections: true,
  restDocumentRefreshMs: true,
  userRateLimitRoutes: true,
  storageSandbox: true,
} satisfies Record<keyof ServicesOptions, true>)

const HOST = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/i

/** The services to mount, checked; a bad value is an `AuthgateConfigError` naming the option. */
export function resolveServicesConfig(options: ServicesOptions, names = OPTION_NAMES): ServicesConfig {
  if (names === OPTION_NAMES) {
    refuseUnknownOptions(options, SERVICES_OPTION_KEYS, 'services.')
    checkValues(options)
  }
  const hosted =
    options.supabaseUrl === undefined ? undefined : normaliseBackendUrl(names.supabaseUrl, options.supabaseUrl)
  if (hosted !== undefined && hosted.pathname !== '/')
    throw new AuthgateConfigError(names.supabaseUrl, 'the project URL has no path (https://<ref>.supabase.co)')
  const own = new Map<string, URL>()
  for (const [name, raw] of Object.entries(options.urls ?? {}) as Array<[UpstreamName, URL | string | undefined]>) {
    if (!(name in URL_SETTINGS)) throw new AuthgateConfigError(`services.urls.${name}`, 'not a service')
    if (raw !== undefined) own.set(URL_SETTINGS[name], normaliseBackendUrl(names.url(name), raw))
  }
  const tenant = options.realtimeTenant
  if (tenant !== undefined && !HOST.test(tenant))
    throw new AuthgateConfigError(names.realtimeTenant, `not a host name: ${JSON.stringify(tenant)}`)

  const upstreams: ServiceUpstream[] = []
  for (const row of SERVICE_TABLE) {
    const self = own.get(row.setting)
    const url = self ?? (row.hosted ? hosted : undefined)
    if (url === undefined) continue
    const base = url.pathname === '/' ? '' : url.pathname
    const basePath = base + (self !== undefined ? row.upstreamPath : row.prefix)
    const timeoutMs = options.timeoutsMs?.[row.name] ?? row.timeoutMs
    upstreams.push({
      row,
      origin: url.origin,
      basePath,
      host: row.setting === 'AUTHGATE_REALTIME_URL' ? tenant : undefined,
      timeoutMs,
      label: row.name,
      selfHosted: self !== undefined,
      inert: row.userContent === true && options.storageSandbox !== false,
    })
  }
  const keys = resolveKeys(options.keys, names)
  if (upstreams.some((u) => u.row.key === 'service') && keys?.service === undefined)
    throw new AuthgateConfigError(
      names.url('meta'),
      `pg-meta is served to the service-role key only: set ${names.service} (and ${names.secret} for secret keys)`,
    )
  return {
    upstreams,
    keys,
    defaultKey: options.defaultKey,
    connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    connections: options.connections ?? 128,
    restDocumentRefreshMs: options.restDocumentRefreshMs ?? 5 * 60_000,
    userLimits: parseUserLimits(names.userLimits, options.userRateLimitRoutes),
  }
}

function resolveKeys(given: ServiceKeys | undefined, names: typeof OPTION_NAMES): ResolvedKeys | undefined {
  if (given === undefined) return undefined
  const keys: ResolvedKeys = {
    anon: given.anon,
    service: given.service,
    publishable: [...(given.publishable ?? [])],
    secret: [...(given.secret ?? [])],
  }
  if (
    keys.anon === undefined &&
    keys.service === undefined &&
    keys.publishable.length === 0 &&
    keys.secret.length === 0
  )
    return undefined
  for (const key of keys.publishable)
    if (!key.startsWith('sb_publishable_'))
      throw new AuthgateConfigError(names.publishable, 'each key starts with sb_publishable_')
  for (const key of keys.secret)
    if (!key.startsWith('sb_secret_')) throw new AuthgateConfigError(names.secret, 'each key starts with sb_secret_')
  // A new key is only ever sent on as the legacy key it stands for: without that key it means nothing.
  if (keys.publishable.length > 0 && keys.anon === undefined)
    throw new AuthgateConfigError(names.publishable, `publishable keys are translated to ${names.anon}: set it too`)
  if (keys.secret.length > 0 && keys.service === undefined)
    throw new AuthgateConfigError(names.secret, `secret keys are translated to ${names.service}: set it too`)
  if (keys.anon !== undefined && keys.anon === keys.service)
    throw new AuthgateConfigError(names.service, `is the same key as ${names.anon}`)
  return keys
}

/**
 * How often PostgREST's description is fetched again: a duration, or off (`false` in code). The
 * variable asks for at least a second; code may ask for less (tests refresh in milliseconds).
 */
const refreshOrOff: SettingValue<number | false> = {
  parse: (variable, raw) => {
    if (isOff(raw)) return false
    const ms = duration().parse(variable, raw)
    if (ms < 1000) throw new AuthgateConfigError(variable, 'at least 1s, or off')
    return ms
  },
  check: (name, v) => (v === false ? false : duration().check(name, v)),
}

const keyList = list((_, raw) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
)

/**
 * The value types of the options whose values are plain (src/config/values.ts): the environment's
 * reader parses its variables with them, and the resolver checks what code gives with them.
 */
const VALUES = {
  realtimeTenant: text,
  anon: text,
  service: text,
  publishable: keyList,
  secret: keyList,
  defaultKey: text,
  connectTimeoutMs: duration(),
  connections: integer(1, 65535),
  timeoutMs: duration(),
  restDocumentRefreshMs: refreshOrOff,
  userRateLimitRoutes: text,
  storageSandbox: boolean,
}

/** Checks the plain values code gives, each by its value type; the resolver checks the rest. */
function checkValues(options: ServicesOptions): void {
  const check = (key: Exclude<keyof typeof VALUES, 'timeoutMs'>, name: string, v: unknown) => {
    if (v !== undefined) VALUES[key].check(name, v)
  }
  check('realtimeTenant', 'services.realtimeTenant', options.realtimeTenant)
  check('defaultKey', 'services.defaultKey', options.defaultKey)
  check('connectTimeoutMs', 'services.connectTimeoutMs', options.connectTimeoutMs)
  check('connections', 'services.connections', options.connections)
  check('restDocumentRefreshMs', 'services.restDocumentRefreshMs', options.restDocumentRefreshMs)
  check('userRateLimitRoutes', 'services.userRateLimitRoutes', options.userRateLimitRoutes)
  check('storageSandbox', 'services.storageSandbox', options.storageSandbox)
  for (const [name, ms] of Object.entries(options.timeoutsMs ?? {}))
    if (ms !== undefined) VALUES.timeoutMs.check(`services.timeoutsMs.${name}`, ms)
  const keys = options.keys ?? {}
  for (const key of ['anon', 'service', 'publishable', 'secret'] as const) check(key, `services.keys.${key}`, keys[key])
}

/** A variable the environment gives, parsed by its option's value type; undefined when not given. */
function given<K extends keyof typeof VALUES>(env: Env, key: K, variable: string) {
  const raw = envValue(env, variable)
  return raw === undefined ? undefined : (VALUES[key].parse(variable, raw) as ReturnType<(typeof VALUES)[K]['parse']>)
}

/** The services from the environment; undefined when none is configured (authgate serves Auth only). */
export function loadServicesConfig(env: Env): ServicesConfig | undefined {
  const urls: Partial<Record<UpstreamName, string>> = {}
  for (const [name, setting] of Object.entries(URL_SETTINGS) as Array<[UpstreamName, ServiceUrlSetting]>) {
    const v = envValue(env, setting)
    if (v !== undefined) urls[name] = v
  }
  const supabaseUrl = envValue(env, 'AUTHGATE_SUPABASE_URL')
  const publishable = given(env, 'publishable', ENV_NAMES.publishable)
  const secret = given(env, 'secret', ENV_NAMES.secret)
  const config = resolveServicesConfig(
    {
      supabaseUrl,
      urls,
      realtimeTenant: given(env, 'realtimeTenant', ENV_NAMES.realtimeTenant),
      keys: {
        anon: given(env, 'anon', ENV_NAMES.anon),
        service: given(env, 'service', ENV_NAMES.service),
        ...(publishable ? { publishable } : {}),
        ...(secret ? { secret } : {}),
      },
      defaultKey: given(env, 'defaultKey', 'AUTHGATE_BACKEND_APIKEY'),
      restDocumentRefreshMs: readSetting(env, 'AUTHGATE_REST_DOCUMENT_REFRESH', refreshOrOff)!,
      userRateLimitRoutes: given(env, 'userRateLimitRoutes', ENV_NAMES.userLimits),
      storageSandbox: given(env, 'storageSandbox', 'AUTHGATE_STORAGE_SANDBOX'),
    },
    ENV_NAMES,
  )
  return config.upstreams.length === 0 ? undefined : config
}

/**
 * The environment with AUTHGATE_BACKEND_URL filled in from AUTHGATE_SUPABASE_URL when only the
 * project URL is given: its Auth is at `/auth/v1`, as for every other hosted service.
 */
export function withHostedBackend(env: Env): Env {
  const project = envValue(env, 'AUTHGATE_SUPABASE_URL')
  if (project === undefined || envValue(env, 'AUTHGATE_BACKEND_URL') !== undefined) return env
  return { ...env, AUTHGATE_BACKEND_URL: `${project.replace(/\/+$/, '')}/auth/v1` }
}
