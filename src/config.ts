import { isIP } from 'node:net'
import { OPTIONAL_GROUPS, type OptionalGroup } from './core/route-groups.ts'

/**
 * Configuration from environment variables, validated eagerly (the habit of undici's constructors):
 * a bad value stops the service with a message that names the variable. The variable names are the
 * public interface; `src/config/schema.ts` lists them with their defaults (README table, `--help`).
 */
import { AuthgateConfigError, envValue, isOff, OFF_WORDS, parseBoolean, parseIntIn, type Env } from './config/env.ts'
import { settingValue, unknownVariables } from './config/schema.ts'
import { parseServePath } from './config/serve-path.ts'
import { refuseUnknownOptions } from './config/known-options.ts'
import { normaliseBackendUrl, type BackendOptions } from './core/backend.ts'

export { AuthgateConfigError, parseBoolean, parseIntIn, type Env }

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

const SIZE = /^(\d+)\s*(b|kb|kib|mb|mib|k|m)?$/i
const UNITS: Record<string, number> = {
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
}

export function parseSize(variable: string, raw: string): number {
  const m = SIZE.exec(raw.trim())
  if (!m)
    throw new AuthgateConfigError(variable, `expected a size like 1048576, 512kb or 1mib, got ${JSON.stringify(raw)}`)
  const n = Number(m[1]) * UNITS[(m[2] ?? 'b').toLowerCase()]!
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new AuthgateConfigError(variable, `must be a positive size, got ${JSON.stringify(raw)}`)
  return n
}

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/
const DURATION_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
/** Longest duration a Node.js timer takes. */
const MAX_DURATION_MS = 2 ** 31 - 1

/**
 * `500ms`, `10s`, `5m`, `1h`. The unit is required: a bare `10` could mean seconds to the reader and
 * milliseconds to the program. Zero only where `allowZero` says it means something.
 */
export function parseDuration(variable: string, raw: string, options: { allowZero?: boolean } = {}): number {
  const v = raw.trim()
  if (/^\d+(\.\d+)?$/.test(v))
    throw new AuthgateConfigError(
      variable,
      `needs a unit (ms, s, m or h), e.g. ${v}s or ${v}ms; got ${JSON.stringify(raw)}`,
    )
  const m = DURATION.exec(v)
  if (!m)
    throw new AuthgateConfigError(variable, `expected a duration like 10s, 500ms or 5m, got ${JSON.stringify(raw)}`)
  const ms = Math.round(Number(m[1]) * DURATION_MS[m[2]!]!)
  if (!Number.isFinite(ms) || ms < 0 || (ms === 0 && !options.allowZero))
    throw new AuthgateConfigError(variable, `must be a positive duration, got ${JSON.stringify(raw)}`)
  if (ms > MAX_DURATION_MS)
    throw new AuthgateConfigError(variable, `must be at most 24 days, got ${JSON.stringify(raw)}`)
  return ms
}

/** The backend base URL, normalised once for every caller (src/core/backend.ts). */
export function parseBackendUrl(variable: string, raw: string | URL): URL {
  return normaliseBackendUrl(variable, raw)
}

export function parsePrefix(variable: string, raw: string): string {
  const p = raw.trim()
  if (p === '' || p === '/') return ''
  if (!p.startsWith('/')) throw new AuthgateConfigError(variable, `must start with "/", got ${JSON.stringify(raw)}`)
  const trimmed = p.replace(/\/+$/, '')
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(trimmed))
    throw new AuthgateConfigError(
      variable,
      `must be plain path segments like /auth or /auth/v1, got ${JSON.stringify(raw)}`,
    )
  return trimmed
}

/**
 * A listening address: an IP address or a host name (RFC 1123 labels). Checked here so that a typo
 * is a configuration error naming HOST, not a resolver failure with a stack trace at listen.
 */
export function parseHost(variable: string, raw: string): string {
  const h = raw.trim()
  const label = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/
  const name =
    h.length <= 253 &&
    h
      .replace(/\.$/, '')
      .split('.')
      .every((l) => label.test(l))
  if (isIP(h) === 0 && !name)
    throw new AuthgateConfigError(
      variable,
      `not an IP address or host name: ${JSON.stringify(raw)} (e.g. 0.0.0.0 for every IPv4 interface, :: for every interface, 127.0.0.1, localhost)`,
    )
  return h
}

const IPV4 = /^(\d{1,3})(\.\d{1,3}){3}$/
export function parseCidrList(variable: string, raw: string): string[] {
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (const item of items) {
    const [addr, bits, extra] = item.split('/')
    const ok =
      extra === undefined &&
      addr !== undefined &&
      (IPV4.test(addr)
        ? addr.split('.').every((o) => Number(o) <= 255) &&
          (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= 32))
        : addr.includes(':') &&
          /^[0-9a-fA-F:.]+$/.test(addr) &&
          (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= 128)))
    if (!ok) throw new AuthgateConfigError(variable, `not an IP address or CIDR range: ${JSON.stringify(item)}`)
  }
  return items
}

/** `sso, MFA` → `['sso', 'mfa']`; an unknown name or `core` stops start-up. */
export function parseDisabledGroups(variable: string, raw: string): OptionalGroup[] {
  const out: OptionalGroup[] = []
  for (const item of raw
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)) {
    if (item === 'core') throw new AuthgateConfigError(variable, 'the core group cannot be disabled')
    if (!(OPTIONAL_GROUPS as string[]).includes(item))
      throw new AuthgateConfigError(
        variable,
        `unknown group ${JSON.stringify(item)} (known: ${OPTIONAL_GROUPS.join(', ')})`,
      )
    if (!out.includes(item as OptionalGroup)) out.push(item as OptionalGroup)
  }
  return out
}

/** `off` (the words that turn a feature off) or `otlp`. */
function parseTracing(variable: string, raw: string): CoreConfig['tracing'] {
  const value = raw.trim().toLowerCase()
  if (value === 'otlp') return 'otlp'
  if (OFF_WORDS.has(value)) return 'off'
  throw new AuthgateConfigError(variable, `expected off or otlp, got ${JSON.stringify(raw)}`)
}

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])

/** `*`, or a comma list of origins (`scheme://host[:port]`, nothing else). */
export function parseOrigins(variable: string, raw: string): string[] {
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (items.includes('*')) {
    if (items.length > 1) throw new AuthgateConfigError(variable, '`*` cannot be combined with other origins')
    return ['*']
  }
  return items.map((item) => {
    let url: URL
    try {
      url = new URL(item)
    } catch {
      throw new AuthgateConfigError(
        variable,
        `not an origin: ${JSON.stringify(item)} (expected e.g. https://app.example.com)`,
      )
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== item.replace(/\/$/, ''))
      throw new AuthgateConfigError(
        variable,
        `not an origin: ${JSON.stringify(item)} (scheme, host and port only, e.g. https://app.example.com)`,
      )
    return url.origin
  })
}

/** A header field name (RFC 9110 token), lower-cased. */
function parseHeaderName(variable: string, raw: string): string {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(raw))
    throw new AuthgateConfigError(variable, `not a header name: ${JSON.stringify(raw)}`)
  return raw.toLowerCase()
}

function servePathOrOff(variable: string, raw: string): string | false {
  return OFF_WORDS.has(raw.toLowerCase()) ? false : parseServePath(variable, raw)
}

/** The environment variable of each core option, so that an error names what the user set. */
const ENV_NAMES: { readonly [K in keyof CoreConfig]-?: string } = {
  port: 'PORT',
  host: 'HOST',
  backendUrl: 'AUTHGATE_BACKEND_URL',
  prefix: 'AUTHGATE_PREFIX',
  bodyLimit: 'AUTHGATE_BODY_LIMIT',
  backendTimeoutMs: 'AUTHGATE_BACKEND_TIMEOUT',
  trustedProxies: 'AUTHGATE_TRUSTED_PROXIES',
  logLevel: 'AUTHGATE_LOG_LEVEL',
  backendConnections: 'AUTHGATE_BACKEND_CONNECTIONS',
  cacheTtlMs: 'AUTHGATE_CACHE_TTL',
  disabledGroups: 'AUTHGATE_DISABLED_GROUPS',
  backendApiKey: 'AUTHGATE_BACKEND_APIKEY',
  backendConnectTimeoutMs: 'AUTHGATE_BACKEND_CONNECT_TIMEOUT',
  corsOrigins: 'AUTHGATE_CORS_ORIGINS',
  maxHeaderSize: 'AUTHGATE_MAX_HEADER_SIZE',
  headerTimeoutMs: 'AUTHGATE_HEADER_TIMEOUT',
  requestTimeoutMs: 'AUTHGATE_REQUEST_TIMEOUT',
  keepAliveTimeoutMs: 'AUTHGATE_KEEP_ALIVE_TIMEOUT',
  maxRequestsPerSocket: 'AUTHGATE_MAX_REQUESTS_PER_SOCKET',
  maxConnections: 'AUTHGATE_MAX_CONNECTIONS',
  socketTimeoutMs: 'AUTHGATE_SOCKET_TIMEOUT',
  requestIdHeader: 'AUTHGATE_REQUEST_ID_HEADER',
  clientIpHeader: 'AUTHGATE_CLIENT_IP_HEADER',
  metricsPath: 'AUTHGATE_METRICS_PATH',
  metricsPort: 'AUTHGATE_METRICS_PORT',
  livenessPath: 'AUTHGATE_LIVENESS_PATH',
  readinessPath: 'AUTHGATE_READINESS_PATH',
  shutdownTimeoutMs: 'AUTHGATE_SHUTDOWN_TIMEOUT',
  shutdownDelayMs: 'AUTHGATE_SHUTDOWN_DELAY',
  readinessFollowsDependencies: 'AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES',
  tracing: 'AUTHGATE_TRACING',
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
  const out: CoreConfigInput = {}
  const get = (key: keyof CoreConfig) => envValue(env, ENV_NAMES[key])
  const each = <K extends keyof CoreConfig>(key: K, parse: (variable: string, raw: string) => CoreConfigInput[K]) => {
    const raw = get(key)
    if (raw !== undefined) out[key] = parse(ENV_NAMES[key], raw)
  }
  const duration = (variable: string, raw: string) => parseDuration(variable, raw)
  const durationOrZero = (variable: string, raw: string) => parseDuration(variable, raw, { allowZero: true })
  const int = (min: number, max: number) => (variable: string, raw: string) => parseIntIn(variable, raw, min, max)
  const pathOrOff = (variable: string, raw: string) => servePathOrOff(variable, raw)
  each('port', int(0, 65535))
  each('host', parseHost)
  each('backendUrl', parseBackendUrl)
  // An empty AUTHGATE_PREFIX means no prefix, not the default.
  if (env.AUTHGATE_PREFIX !== undefined) out.prefix = parsePrefix('AUTHGATE_PREFIX', env.AUTHGATE_PREFIX)
  each('bodyLimit', parseSize)
  each('backendTimeoutMs', duration)
  each('trustedProxies', (variable, raw) => (isOff(raw) ? [] : parseCidrList(variable, raw)))
  each('logLevel', (_, raw) => raw)
  each('backendConnections', int(1, 65535))
  each('cacheTtlMs', (variable, raw) => (raw === '0' || isOff(raw) ? 0 : parseDuration(variable, raw)))
  each('disabledGroups', (variable, raw) => (isOff(raw) ? [] : parseDisabledGroups(variable, raw)))
  each('backendApiKey', (_, raw) => raw)
  each('backendConnectTimeoutMs', duration)
  each('corsOrigins', (variable, raw) => (isOff(raw) ? [] : parseOrigins(variable, raw)))
  each('maxHeaderSize', parseSize)
  each('headerTimeoutMs', duration)
  each('requestTimeoutMs', duration)
  each('keepAliveTimeoutMs', duration)
  each('maxRequestsPerSocket', int(0, 1_000_000))
  each('maxConnections', int(0, 10_000_000))
  each('socketTimeoutMs', (variable, raw) => (raw === '0' || isOff(raw) ? 0 : parseDuration(variable, raw)))
  each('requestIdHeader', parseHeaderName)
  each('clientIpHeader', parseHeaderName)
  each('metricsPath', pathOrOff)
  each('metricsPort', int(0, 65535))
  each('livenessPath', pathOrOff)
  each('readinessPath', pathOrOff)
  each('shutdownTimeoutMs', duration)
  each('shutdownDelayMs', durationOrZero)
  each('readinessFollowsDependencies', parseBoolean)
  each('tracing', parseTracing)
  return out
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
  const fail = (message: string): never => {
    throw new AuthgateConfigError(name, message)
  }
  const integer = (min: number, max: number) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
      fail(`must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`)
    return value
  }
  const duration = (allowZero: boolean) => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (value === 0 && !allowZero))
      fail(`must be a ${allowZero ? 'non-negative' : 'positive'} number of milliseconds, got ${JSON.stringify(value)}`)
    if ((value as number) > MAX_DURATION_MS) fail(`must be at most 24 days, got ${String(value)} ms`)
    return value
  }
  const list = () => {
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
      fail(`must be an array of strings, got ${JSON.stringify(value)}`)
    return (value as string[]).join(',')
  }
  const pathOrOff = () => {
    if (value === false) return false
    if (typeof value !== 'string') fail(`must be a path or false, got ${JSON.stringify(value)}`)
    return parseServePath(name, value as string)
  }
  const text = () => {
    if (typeof value !== 'string' || value.trim() === '')
      fail(`must be a non-empty string, got ${JSON.stringify(value)}`)
    return value as string
  }
  let out: unknown
  switch (key) {
    case 'port':
      out = integer(0, 65535)
      break
    case 'metricsPort':
      out = value === undefined ? undefined : integer(0, 65535)
      break
    case 'backendConnections':
      out = integer(1, 65535)
      break
    case 'maxRequestsPerSocket':
      out = integer(0, 1_000_000)
      break
    case 'maxConnections':
      out = integer(0, 10_000_000)
      break
    case 'bodyLimit':
    case 'maxHeaderSize':
      out = integer(1, Number.MAX_SAFE_INTEGER)
      break
    case 'cacheTtlMs':
    case 'shutdownDelayMs':
    case 'socketTimeoutMs':
      out = duration(true)
      break
    case 'backendTimeoutMs':
    case 'backendConnectTimeoutMs':
    case 'headerTimeoutMs':
    case 'requestTimeoutMs':
    case 'keepAliveTimeoutMs':
    case 'shutdownTimeoutMs':
      out = duration(false)
      break
    case 'readinessFollowsDependencies':
      if (typeof value !== 'boolean') fail(`must be true or false, got ${JSON.stringify(value)}`)
      out = value
      break
    case 'tracing':
      out = parseTracing(name, text())
      break
    case 'host':
      out = parseHost(name, text())
      break
    case 'backendApiKey':
      out = value === undefined ? undefined : text()
      break
    case 'backendUrl':
      if (!(value instanceof URL) && typeof value !== 'string') fail(`must be a URL, got ${JSON.stringify(value)}`)
      out = normaliseBackendUrl(name, value as URL | string)
      break
    case 'prefix':
      if (typeof value !== 'string') fail(`must be a string like /auth, got ${JSON.stringify(value)}`)
      out = parsePrefix(name, value as string)
      break
    case 'logLevel':
      if (typeof value !== 'string' || !LOG_LEVELS.has(value)) fail(`must be one of ${[...LOG_LEVELS].join(', ')}`)
      out = value
      break
    case 'trustedProxies':
      out = parseCidrList(name, list())
      break
    case 'corsOrigins':
      out = parseOrigins(name, list())
      break
    case 'disabledGroups':
      out = parseDisabledGroups(name, list())
      break
    case 'requestIdHeader':
    case 'clientIpHeader':
      out = parseHeaderName(name, text())
      break
    case 'metricsPath':
    case 'livenessPath':
    case 'readinessPath':
      out = pathOrOff()
      break
    default:
      fail('is not a core option')
  }
  return out as CoreConfig[K]
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
