import type { OptionalGroup } from './core/route-groups.ts'

/**
 * Configuration from environment variables, validated eagerly (the habit of undici's constructors):
 * a bad value stops the service with a message that names the variable. The variable names are the
 * public interface; `src/config/schema.ts` lists them with their defaults (README table, `--help`).
 */
import { AuthgateConfigError, envValue, parseBoolean, parseIntIn, type Env } from './config/env.ts'
import { settingValue, unknownVariables } from './config/schema.ts'
import {
  backendUrl,
  boolean,
  duration,
  integer,
  list,
  logLevel,
  parseCidrList,
  parseDisabledGroups,
  parseHeaderName,
  parseHost,
  parseOrigins,
  parseTracing,
  pathOrOff,
  prefix,
  size,
  text,
  textWith,
  type SettingValue,
} from './config/values.ts'
import { refuseUnknownOptions } from './config/known-options.ts'
import type { BackendOptions } from './core/backend.ts'

export { AuthgateConfigError, parseBoolean, parseIntIn, type Env }
export {
  parseBackendUrl,
  parseCidrList,
  parseDisabledGroups,
  parseDuration,
  parseHost,
  parseOrigins,
  parsePrefix,
  parseSize,
} from './config/values.ts'

export interface CoreConfig {
  port: number
  host: string
  /** Base URL of Supabase Auth, may carry a path (hosted: https://<ref>.supabase.co/auth/v1). No trailing slash. */
  backendUrl: URL
  /** Mount prefix, '' or '/x...' without trailing slash. */
  prefix: string
  bodyLimit: number
  backendTimeoutMs: number
  /** CIDR list whose X-Forwarded-For entries are believed; empty = socket address only. */
  trustedProxies: string[]
  logLevel: string
  backendConnections: number
  /** Lifetime of cacheable answers the backend sends without Cache-Control freshness; 0: only what it marks. */
  cacheTtlMs: number
  /** Route groups not mounted (src/core/route-groups.ts); `core` cannot be among them. */
  disabledGroups: readonly OptionalGroup[]
  /** Hosted Supabase: sent as `apikey` on every backend request, replacing the client's. */
  backendApiKey: string | undefined
  backendConnectTimeoutMs: number
  /** Allowed browser origins; `['*']` for any; empty for no CORS handling. */
  corsOrigins: string[]
  /** Largest request head, bytes. */
  maxHeaderSize: number
  /** Time a client has to send its request head. */
  headerTimeoutMs: number
  /** Time a client has to send its whole request, body included. */
  requestTimeoutMs: number
  keepAliveTimeoutMs: number
  /** 0: no limit. */
  maxRequestsPerSocket: number
  /** Most client connections open at once; beyond it new ones are closed at once. 0: no limit. */
  maxConnections: number
  /**
   * Longest a client connection with a request open may go without a byte moving (a client that
   * stops reading its answer); defaults to the backend timeout + 15 s. 0: no limit.
   */
  socketTimeoutMs: number
  /** Lower case. */
  requestIdHeader: string
  /**
   * Lower case: the header that carries the one client IP to Supabase Auth (its
   * GOTRUE_RATE_LIMIT_HEADER; `sb-forwarded-for` on the hosted platform).
   */
  clientIpHeader: string
  metricsPath: string | false
  /** Serve the metrics on their own listener on this port instead of the main one. */
  metricsPort: number | undefined
  /** The address the metrics listener binds (with `metricsPort`): loopback unless opened on purpose. */
  metricsHost: string
  livenessPath: string | false
  readinessPath: string | false
  /** Readiness is also false while Supabase Auth or Redis is down (off by default: docs/decisions.md, D24). */
  readinessFollowsDependencies: boolean
  /** OpenTelemetry traces: off, or sent over OTLP/HTTP (src/observability/tracing.ts). */
  tracing: 'off' | 'otlp'
  /** Longest wait for requests in flight on shutdown; defaults to the backend timeout + 5 s. */
  shutdownTimeoutMs: number
  /** Time readiness is 503 before the listener closes. */
  shutdownDelayMs: number
}

/**
 * One descriptor per core option: its variable (whose default, group and help are in
 * src/config/schema.ts) and how its value is read, from the variable's text and from code. The
 * environment path (`fromEnv`), the code path (`checkOption`) and the errors' names all derive
 * from this table; an option is written here once.
 */
interface CoreSetting<T> {
  variable: string
  value: SettingValue<T>
  /** Code may give `undefined` (no such thing): the option has no default. */
  optional?: true
  /** A blank variable is a value (AUTHGATE_PREFIX= means no prefix), not the default. */
  blankIsValue?: true
}

const CORE_SETTINGS: { readonly [K in keyof CoreConfig]-?: CoreSetting<CoreConfig[K]> } = {
  port: { variable: 'PORT', value: integer(0, 65535) },
  host: { variable: 'HOST', value: textWith(parseHost) },
  backendUrl: { variable: 'AUTHGATE_BACKEND_URL', value: backendUrl },
  prefix: { variable: 'AUTHGATE_PREFIX', value: prefix, blankIsValue: true },
  bodyLimit: { variable: 'AUTHGATE_BODY_LIMIT', value: size },
  backendTimeoutMs: { variable: 'AUTHGATE_BACKEND_TIMEOUT', value: duration() },
  trustedProxies: { variable: 'AUTHGATE_TRUSTED_PROXIES', value: list(parseCidrList) },
  logLevel: { variable: 'AUTHGATE_LOG_LEVEL', value: logLevel },
  backendConnections: { variable: 'AUTHGATE_BACKEND_CONNECTIONS', value: integer(1, 65535) },
  cacheTtlMs: { variable: 'AUTHGATE_CACHE_TTL', value: duration(true) },
  disabledGroups: { variable: 'AUTHGATE_DISABLED_GROUPS', value: list(parseDisabledGroups) },
  backendApiKey: { variable: 'AUTHGATE_BACKEND_APIKEY', value: text, optional: true },
  backendConnectTimeoutMs: { variable: 'AUTHGATE_BACKEND_CONNECT_TIMEOUT', value: duration() },
  corsOrigins: { variable: 'AUTHGATE_CORS_ORIGINS', value: list(parseOrigins) },
  maxHeaderSize: { variable: 'AUTHGATE_MAX_HEADER_SIZE', value: size },
  headerTimeoutMs: { variable: 'AUTHGATE_HEADER_TIMEOUT', value: duration() },
  requestTimeoutMs: { variable: 'AUTHGATE_REQUEST_TIMEOUT', value: duration() },
  keepAliveTimeoutMs: { variable: 'AUTHGATE_KEEP_ALIVE_TIMEOUT', value: duration() },
  maxRequestsPerSocket: { variable: 'AUTHGATE_MAX_REQUESTS_PER_SOCKET', value: integer(0, 1_000_000) },
  maxConnections: { variable: 'AUTHGATE_MAX_CONNECTIONS', value: integer(0, 10_000_000) },
  socketTimeoutMs: { variable: 'AUTHGATE_SOCKET_TIMEOUT', value: duration(true) },
  requestIdHeader: { variable: 'AUTHGATE_REQUEST_ID_HEADER', value: textWith(parseHeaderName) },
  clientIpHeader: { variable: 'AUTHGATE_CLIENT_IP_HEADER', value: textWith(parseHeaderName) },
  metricsPath: { variable: 'AUTHGATE_METRICS_PATH', value: pathOrOff },
  metricsPort: { variable: 'AUTHGATE_METRICS_PORT', value: integer(0, 65535), optional: true },
  metricsHost: { variable: 'AUTHGATE_METRICS_HOST', value: textWith(parseHost) },
  livenessPath: { variable: 'AUTHGATE_LIVENESS_PATH', value: pathOrOff },
  readinessPath: { variable: 'AUTHGATE_READINESS_PATH', value: pathOrOff },
  shutdownTimeoutMs: { variable: 'AUTHGATE_SHUTDOWN_TIMEOUT', value: duration() },
  shutdownDelayMs: { variable: 'AUTHGATE_SHUTDOWN_DELAY', value: duration(true) },
  readinessFollowsDependencies: { variable: 'AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES', value: boolean },
  tracing: { variable: 'AUTHGATE_TRACING', value: textWith(parseTracing) },
}

const ENV_NAMES = Object.fromEntries(Object.entries(CORE_SETTINGS).map(([k, d]) => [k, d.variable])) as {
  readonly [K in keyof CoreConfig]: string
}

/** The names of the core options, as code gives them. */
export const CORE_OPTIONS: readonly string[] = Object.keys(ENV_NAMES)

/**
 * The options of the one connection to Supabase Auth, from the configuration: the service, the
 * plugin and the doctor build their `SupabaseAuthClient` from these, so each sends the same
 * `apikey`, request-id and client-IP headers.
 */
export function backendOptions(
  config: Pick<
    CoreConfig,
    | 'backendUrl'
    | 'backendApiKey'
    | 'backendTimeoutMs'
    | 'backendConnectTimeoutMs'
    | 'backendConnections'
    | 'requestIdHeader'
    | 'clientIpHeader'
  >,
  connections = config.backendConnections,
): BackendOptions {
  return {
    url: config.backendUrl,
    apiKey: config.backendApiKey,
    timeoutMs: config.backendTimeoutMs,
    connectTimeoutMs: config.backendConnectTimeoutMs,
    connections,
    requestIdHeader: config.requestIdHeader,
    clientIpHeader: config.clientIpHeader,
  }
}

export type CoreConfigInput = Partial<Omit<CoreConfig, 'backendUrl'>> & { backendUrl?: URL | string }

/** The options given in the environment, parsed from their text; absent ones are left out. */
function fromEnv(env: Env): CoreConfigInput {
  const out: Record<string, unknown> = {}
  for (const [key, d] of Object.entries(CORE_SETTINGS) as Array<[string, CoreSetting<unknown>]>) {
    const raw = d.blankIsValue === true ? env[d.variable] : envValue(env, d.variable)
    if (raw !== undefined) out[key] = d.value.parse(d.variable, raw)
  }
  return out as CoreConfigInput
}

let defaults: CoreConfig | undefined
/** The documented defaults (the settings schema's), parsed once. */
function coreDefaults(): CoreConfig {
  if (defaults) return defaults
  const env: Env = {}
  for (const name of Object.values(ENV_NAMES)) {
    const value = settingValue({}, name)
    if (value !== undefined) env[name] = value
  }
  const parsed = fromEnv(env) as CoreConfig
  defaults = {
    ...parsed,
    trustedProxies: [],
    corsOrigins: [],
    disabledGroups: [],
    backendApiKey: undefined,
    metricsPort: undefined,
    // The shutdown deadline and the socket timeout follow the backend timeout unless given.
    shutdownTimeoutMs: parsed.backendTimeoutMs + 5000,
    socketTimeoutMs: parsed.backendTimeoutMs + 15_000,
  }
  return defaults
}

const resolved = new WeakSet<CoreConfig>()

/** Whether `config` is what resolveConfig returned (the service hands its own to the plugin). */
export function isResolvedConfig(config: object | undefined): boolean {
  return config !== undefined && resolved.has(config as CoreConfig)
}

/** Checks one option's value as code gives it, with the same rules as its environment variable. */
function checkOption<K extends keyof CoreConfig>(key: K, value: unknown, name: string): CoreConfig[K] {
  const d = CORE_SETTINGS[key] as CoreSetting<CoreConfig[K]>
  if (value === undefined && d.optional === true) return undefined as CoreConfig[K]
  return d.value.check(name, value)
}

/**
 * The one resolver of the core options: the documented defaults, then each option given, checked
 * with the same rules whether it came from the environment or from code (URLs normalised, ranges
 * and paths checked), then the rules between options. An error names the option as the caller
 * gave it. A configuration this function returned is returned as it is.
 */
export function resolveConfig(
  input: CoreConfigInput = {},
  nameOf: (key: keyof CoreConfig) => string = (k) => k,
): CoreConfig {
  if (resolved.has(input as CoreConfig)) return input as CoreConfig
  const config: CoreConfig = { ...coreDefaults() }
  const target = config as unknown as Record<string, unknown>
  refuseUnknownOptions(input, CORE_OPTIONS)
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined && key !== 'backendApiKey' && key !== 'metricsPort') continue
    target[key] = checkOption(key as keyof CoreConfig, value, nameOf(key as keyof CoreConfig))
  }
  if (input.shutdownTimeoutMs === undefined) config.shutdownTimeoutMs = config.backendTimeoutMs + 5000
  if (input.socketTimeoutMs === undefined) config.socketTimeoutMs = config.backendTimeoutMs + 15_000
  // While authgate waits for the backend, the client's connection is silent: a shorter socket
  // timeout would cut answers the backend is still allowed to give.
  if (config.socketTimeoutMs !== 0 && config.socketTimeoutMs <= config.backendTimeoutMs)
    throw new AuthgateConfigError(
      nameOf('socketTimeoutMs'),
      `must be longer than ${nameOf('backendTimeoutMs')} (${config.backendTimeoutMs} ms), or 0 for none; got ${config.socketTimeoutMs} ms`,
    )
  if (config.requestTimeoutMs < config.headerTimeoutMs)
    throw new AuthgateConfigError(
      nameOf('requestTimeoutMs'),
      `must be at least ${nameOf('headerTimeoutMs')} (${config.headerTimeoutMs} ms), got ${config.requestTimeoutMs} ms`,
    )
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port)
    throw new AuthgateConfigError(
      nameOf('metricsPort'),
      `must differ from ${nameOf('port')} (leave it unset to serve metrics on ${nameOf('port')})`,
    )
  const served: Array<[keyof CoreConfig, string | false]> = [
    ['metricsPath', config.metricsPort === undefined ? config.metricsPath : false],
    ['livenessPath', config.livenessPath],
    ['readinessPath', config.readinessPath],
  ]
  for (const [i, [first, path]] of served.entries()) {
    const clash = served.slice(i + 1).find(([, other]) => path !== false && other === path)
    if (!clash) continue
    // Blame the one that was given (the other is then its default), naming both.
    const [blamed, other] =
      input[clash[0]] === undefined && input[first] !== undefined ? [first, clash[0]] : [clash[0], first]
    throw new AuthgateConfigError(
      nameOf(blamed),
      `${JSON.stringify(path)} is also ${nameOf(other)}'s path; the two must differ`,
    )
  }
  resolved.add(config)
  return config
}

/**
 * Reads the core settings. Unknown `AUTHGATE_*` variables are an error naming the closest known
 * one (a misspelled variable would otherwise start the service on a default); `strict: false`
 * skips that check, for library users who read only this part of the environment.
 */
export function loadCoreConfig(env: Env = process.env, options: { strict?: boolean } = {}): CoreConfig {
  if (options.strict !== false) checkUnknownVariables(env)
  return resolveConfig(fromEnv(env), (key) => ENV_NAMES[key])
}

/** Throws for the first unknown `AUTHGATE_*` variable, naming the closest known setting. */
export function checkUnknownVariables(env: Env): void {
  const unknown = unknownVariables(env)
  if (unknown.length === 0) return
  const { name, closest } = unknown[0]!
  const more =
    unknown.length > 1
      ? ` (and ${unknown
          .slice(1)
          .map((u) => u.name)
          .join(', ')})`
      : ''
  throw new AuthgateConfigError(
    name,
    `unknown variable${more}; did you mean ${closest}? (authgate --help lists every setting)`,
  )
}
