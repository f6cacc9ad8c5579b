import { OPTIONAL_GROUPS, type OptionalGroup } from './auth/groups.ts'

/**
 * Configuration from environment variables, validated eagerly (the habit of undici's constructors):
 * a bad value stops the service with a message that names the variable. The variable names are the
 * public interface; `src/config/schema.ts` lists them with their defaults (README table, `--help`).
 */
import { ConfigError, envValue, parseIntIn, type Env } from './config/env.ts'
import { settingValue, unknownVariables } from './config/schema.ts'
import { parseServePath } from './openapi/config.ts'

export { ConfigError, parseIntIn, type Env }

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
  /** Route groups not mounted (src/auth/groups.ts); `core` cannot be among them. */
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
  /** Lower case. */
  requestIdHeader: string
  metricsPath: string | false
  /** Serve the metrics on their own listener on this port instead of the main one. */
  metricsPort: number | undefined
  livenessPath: string | false
  readinessPath: string | false
  /** Readiness is also false while Supabase Auth or Redis is down (off by default: docs/decisions.md, D24). */
  readinessFollowsDependencies: boolean
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
  if (!m) throw new ConfigError(variable, `expected a size like 1048576, 512kb or 1mib, got ${JSON.stringify(raw)}`)
  const n = Number(m[1]) * UNITS[(m[2] ?? 'b').toLowerCase()]!
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new ConfigError(variable, `must be a positive size, got ${JSON.stringify(raw)}`)
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
    throw new ConfigError(variable, `needs a unit (ms, s, m or h), e.g. ${v}s or ${v}ms; got ${JSON.stringify(raw)}`)
  const m = DURATION.exec(v)
  if (!m) throw new ConfigError(variable, `expected a duration like 10s, 500ms or 5m, got ${JSON.stringify(raw)}`)
  const ms = Math.round(Number(m[1]) * DURATION_MS[m[2]!]!)
  if (!Number.isFinite(ms) || ms < 0 || (ms === 0 && !options.allowZero))
    throw new ConfigError(variable, `must be a positive duration, got ${JSON.stringify(raw)}`)
  if (ms > MAX_DURATION_MS) throw new ConfigError(variable, `must be at most 24 days, got ${JSON.stringify(raw)}`)
  return ms
}

export function parseBackendUrl(variable: string, raw: string): URL {
  let url: URL
  try {
    url = new URL(raw.trim())
  } catch {
    throw new ConfigError(variable, `not a valid URL: ${JSON.stringify(raw)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(variable, `must be http or https, got ${url.protocol}`)
  if (url.search || url.hash) throw new ConfigError(variable, 'must not carry a query or fragment')
  if (url.username || url.password) throw new ConfigError(variable, 'must not carry credentials')
  url.pathname = url.pathname.replace(/\/+$/, '')
  return url
}

export function parsePrefix(variable: string, raw: string): string {
  const p = raw.trim()
  if (p === '' || p === '/') return ''
  if (!p.startsWith('/')) throw new ConfigError(variable, `must start with "/", got ${JSON.stringify(raw)}`)
  const trimmed = p.replace(/\/+$/, '')
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(trimmed))
    throw new ConfigError(variable, `must be plain path segments like /auth or /auth/v1, got ${JSON.stringify(raw)}`)
  return trimmed
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
    if (!ok) throw new ConfigError(variable, `not an IP address or CIDR range: ${JSON.stringify(item)}`)
  }
  return items
}

function parseCacheTtl(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '0' || raw.trim() === 'off') return 0
  return parseDuration('AUTHGATE_CACHE_TTL', raw)
}

/** `sso, MFA` → `['sso', 'mfa']`; an unknown name or `core` stops start-up. */
export function parseDisabledGroups(variable: string, raw: string): OptionalGroup[] {
  const out: OptionalGroup[] = []
  for (const item of raw
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)) {
    if (item === 'core') throw new ConfigError(variable, 'the core group cannot be disabled')
    if (!(OPTIONAL_GROUPS as string[]).includes(item))
      throw new ConfigError(variable, `unknown group ${JSON.stringify(item)} (known: ${OPTIONAL_GROUPS.join(', ')})`)
    if (!out.includes(item as OptionalGroup)) out.push(item as OptionalGroup)
  }
  return out
}

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])

/** `*`, or a comma list of origins (`scheme://host[:port]`, nothing else). */
export function parseOrigins(variable: string, raw: string): string[] {
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (items.includes('*')) {
    if (items.length > 1) throw new ConfigError(variable, '`*` cannot be combined with other origins')
    return ['*']
  }
  return items.map((item) => {
    let url: URL
    try {
      url = new URL(item)
    } catch {
      throw new ConfigError(variable, `not an origin: ${JSON.stringify(item)} (expected e.g. https://app.example.com)`)
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== item.replace(/\/$/, ''))
      throw new ConfigError(
        variable,
        `not an origin: ${JSON.stringify(item)} (scheme, host and port only, e.g. https://app.example.com)`,
      )
    return url.origin
  })
}

/** A header field name (RFC 9110 token), lower-cased. */
function parseHeaderName(variable: string, raw: string): string {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(raw))
    throw new ConfigError(variable, `not a header name: ${JSON.stringify(raw)}`)
  return raw.toLowerCase()
}

const DISABLED = new Set(['off', 'false', 'none', 'disabled'])

/** `true`/`false` (also `on`/`off`, `yes`/`no`, `1`/`0`). */
export function parseBoolean(variable: string, raw: string): boolean {
  const v = raw.trim().toLowerCase()
  if (['true', 'on', 'yes', '1'].includes(v)) return true
  if (['false', 'off', 'no', '0'].includes(v)) return false
  throw new ConfigError(variable, `expected true or false, got ${JSON.stringify(raw)}`)
}

function servePathOrOff(variable: string, raw: string): string | false {
  return DISABLED.has(raw.toLowerCase()) ? false : parseServePath(variable, raw)
}

/**
 * Reads the core settings. Unknown `AUTHGATE_*` variables are an error naming the closest known
 * one (a misspelled variable would otherwise start the service on a default); `strict: false`
 * skips that check, for library users who read only this part of the environment.
 */
export function loadCoreConfig(env: Env = process.env, options: { strict?: boolean } = {}): CoreConfig {
  if (options.strict !== false) checkUnknownVariables(env)
  const get = (name: string) => settingValue(env, name)
  const required = (name: string) => get(name)!
  const logLevel = required('AUTHGATE_LOG_LEVEL')
  if (!LOG_LEVELS.has(logLevel))
    throw new ConfigError('AUTHGATE_LOG_LEVEL', `must be one of ${[...LOG_LEVELS].join(', ')}`)
  const backendTimeoutMs = parseDuration('AUTHGATE_BACKEND_TIMEOUT', required('AUTHGATE_BACKEND_TIMEOUT'))
  const shutdownTimeout = get('AUTHGATE_SHUTDOWN_TIMEOUT')
  const trusted = get('AUTHGATE_TRUSTED_PROXIES')
  const cors = get('AUTHGATE_CORS_ORIGINS')
  const metricsPort = get('AUTHGATE_METRICS_PORT')
  const port = parseIntIn('PORT', required('PORT'), 0, 65535)
  const config: CoreConfig = {
    port,
    host: required('HOST'),
    backendUrl: parseBackendUrl('AUTHGATE_BACKEND_URL', required('AUTHGATE_BACKEND_URL')),
    // An empty AUTHGATE_PREFIX means no prefix, not the default.
    prefix: parsePrefix('AUTHGATE_PREFIX', env.AUTHGATE_PREFIX ?? required('AUTHGATE_PREFIX')),
    bodyLimit: parseSize('AUTHGATE_BODY_LIMIT', required('AUTHGATE_BODY_LIMIT')),
    backendTimeoutMs,
    trustedProxies: trusted === undefined ? [] : parseCidrList('AUTHGATE_TRUSTED_PROXIES', trusted),
    logLevel,
    backendConnections: parseIntIn('AUTHGATE_BACKEND_CONNECTIONS', required('AUTHGATE_BACKEND_CONNECTIONS'), 1, 65535),
    cacheTtlMs: parseCacheTtl(get('AUTHGATE_CACHE_TTL')),
    disabledGroups: parseDisabledGroups('AUTHGATE_DISABLED_GROUPS', get('AUTHGATE_DISABLED_GROUPS') ?? ''),
    backendApiKey: envValue(env, 'AUTHGATE_BACKEND_APIKEY'),
    backendConnectTimeoutMs: parseDuration(
      'AUTHGATE_BACKEND_CONNECT_TIMEOUT',
      required('AUTHGATE_BACKEND_CONNECT_TIMEOUT'),
    ),
    corsOrigins: cors === undefined ? [] : parseOrigins('AUTHGATE_CORS_ORIGINS', cors),
    maxHeaderSize: parseSize('AUTHGATE_MAX_HEADER_SIZE', required('AUTHGATE_MAX_HEADER_SIZE')),
    headerTimeoutMs: parseDuration('AUTHGATE_HEADER_TIMEOUT', required('AUTHGATE_HEADER_TIMEOUT')),
    requestTimeoutMs: parseDuration('AUTHGATE_REQUEST_TIMEOUT', required('AUTHGATE_REQUEST_TIMEOUT')),
    keepAliveTimeoutMs: parseDuration('AUTHGATE_KEEP_ALIVE_TIMEOUT', required('AUTHGATE_KEEP_ALIVE_TIMEOUT')),
    maxRequestsPerSocket: parseIntIn(
      'AUTHGATE_MAX_REQUESTS_PER_SOCKET',
      required('AUTHGATE_MAX_REQUESTS_PER_SOCKET'),
      0,
      1_000_000,
    ),
    requestIdHeader: parseHeaderName('AUTHGATE_REQUEST_ID_HEADER', required('AUTHGATE_REQUEST_ID_HEADER')),
    metricsPath: servePathOrOff('AUTHGATE_METRICS_PATH', required('AUTHGATE_METRICS_PATH')),
    metricsPort: metricsPort === undefined ? undefined : parseIntIn('AUTHGATE_METRICS_PORT', metricsPort, 0, 65535),
    livenessPath: servePathOrOff('AUTHGATE_LIVENESS_PATH', required('AUTHGATE_LIVENESS_PATH')),
    readinessPath: servePathOrOff('AUTHGATE_READINESS_PATH', required('AUTHGATE_READINESS_PATH')),
    readinessFollowsDependencies: parseBoolean(
      'AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES',
      required('AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES'),
    ),
    shutdownTimeoutMs:
      shutdownTimeout === undefined
        ? backendTimeoutMs + 5000
        : parseDuration('AUTHGATE_SHUTDOWN_TIMEOUT', shutdownTimeout),
    shutdownDelayMs: parseDuration('AUTHGATE_SHUTDOWN_DELAY', required('AUTHGATE_SHUTDOWN_DELAY'), {
      allowZero: true,
    }),
  }
  if (config.requestTimeoutMs < config.headerTimeoutMs)
    throw new ConfigError(
      'AUTHGATE_REQUEST_TIMEOUT',
      `must be at least AUTHGATE_HEADER_TIMEOUT (${config.headerTimeoutMs} ms), got ${config.requestTimeoutMs} ms`,
    )
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === port)
    throw new ConfigError('AUTHGATE_METRICS_PORT', 'must differ from PORT (leave it unset to serve metrics on PORT)')
  const served = [
    config.metricsPort === undefined ? config.metricsPath : false,
    config.livenessPath,
    config.readinessPath,
  ]
  const paths = served.filter((p): p is string => p !== false)
  if (new Set(paths).size !== paths.length)
    throw new ConfigError(
      'AUTHGATE_READINESS_PATH',
      `AUTHGATE_METRICS_PATH, AUTHGATE_LIVENESS_PATH and AUTHGATE_READINESS_PATH must differ, got ${paths.join(', ')}`,
    )
  return config
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
  throw new ConfigError(name, `unknown variable${more}; did you mean ${closest}? (authgate --help lists every setting)`)
}
