/**
 * Configuration from environment variables, validated eagerly (the habit of undici's constructors):
 * a bad value stops the service with a message that names the variable. The variable names are the
 * public interface; the README's table lists them.
 */
export class ConfigError extends Error {
  readonly variable: string
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`)
    this.name = 'ConfigError'
    this.variable = variable
  }
}

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
}

type Env = Record<string, string | undefined>

const SIZE = /^(\d+)\s*(b|kb|kib|mb|mib|k|m)?$/i
const UNITS: Record<string, number> = { b: 1, k: 1024, kb: 1000, kib: 1024, m: 1024 ** 2, mb: 1000 ** 2, mib: 1024 ** 2 }

export function parseSize(variable: string, raw: string): number {
  const m = SIZE.exec(raw.trim())
  if (!m) throw new ConfigError(variable, `expected a size like 1048576, 512kb or 1mib, got ${JSON.stringify(raw)}`)
  const n = Number(m[1]) * UNITS[(m[2] ?? 'b').toLowerCase()]!
  if (!Number.isSafeInteger(n) || n <= 0) throw new ConfigError(variable, `must be a positive size, got ${JSON.stringify(raw)}`)
  return n
}

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/
const DURATION_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** `500ms`, `10s`, `5m`, `1h`; a bare number is milliseconds. */
export function parseDuration(variable: string, raw: string): number {
  const m = DURATION.exec(raw.trim())
  if (!m) throw new ConfigError(variable, `expected a duration like 10s, 500ms or 5m, got ${JSON.stringify(raw)}`)
  const ms = Number(m[1]) * DURATION_MS[m[2] ?? 'ms']!
  if (!Number.isFinite(ms) || ms <= 0) throw new ConfigError(variable, `must be a positive duration, got ${JSON.stringify(raw)}`)
  return Math.round(ms)
}

function parseIntIn(variable: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(variable, `expected an integer, got ${JSON.stringify(raw)}`)
  const n = Number(raw)
  if (n < min || n > max) throw new ConfigError(variable, `must be between ${min} and ${max}, got ${n}`)
  return n
}

export function parseBackendUrl(variable: string, raw: string): URL {
  let url: URL
  try {
    url = new URL(raw.trim())
  } catch {
    throw new ConfigError(variable, `not a valid URL: ${JSON.stringify(raw)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(variable, `must be http or https, got ${url.protocol}`)
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
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(trimmed)) throw new ConfigError(variable, `must be plain path segments like /auth or /auth/v1, got ${JSON.stringify(raw)}`)
  return trimmed
}

const IPV4 = /^(\d{1,3})(\.\d{1,3}){3}$/
export function parseCidrList(variable: string, raw: string): string[] {
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean)
  for (const item of items) {
    const [addr, bits, extra] = item.split('/')
    const ok =
      extra === undefined &&
      addr !== undefined &&
      (IPV4.test(addr) ? addr.split('.').every((o) => Number(o) <= 255) && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= 32))
        : addr.includes(':') && /^[0-9a-fA-F:.]+$/.test(addr) && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= 128)))
    if (!ok) throw new ConfigError(variable, `not an IP address or CIDR range: ${JSON.stringify(item)}`)
  }
  return items
}

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])

export function loadCoreConfig(env: Env = process.env): CoreConfig {
  const get = (name: string) => {
    const v = env[name]
    return v === undefined || v.trim() === '' ? undefined : v
  }
  const logLevel = get('AUTHGATE_LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.has(logLevel)) throw new ConfigError('AUTHGATE_LOG_LEVEL', `must be one of ${[...LOG_LEVELS].join(', ')}`)
  return {
    port: get('PORT') === undefined ? 8080 : parseIntIn('PORT', get('PORT')!, 0, 65535),
    host: get('HOST') ?? '0.0.0.0',
    backendUrl: parseBackendUrl('AUTHGATE_BACKEND_URL', get('AUTHGATE_BACKEND_URL') ?? 'http://localhost:9999'),
    prefix: parsePrefix('AUTHGATE_PREFIX', env.AUTHGATE_PREFIX ?? '/auth'),
    bodyLimit: get('AUTHGATE_BODY_LIMIT') === undefined ? 1024 * 1024 : parseSize('AUTHGATE_BODY_LIMIT', get('AUTHGATE_BODY_LIMIT')!),
    backendTimeoutMs: get('AUTHGATE_BACKEND_TIMEOUT') === undefined ? 15_000 : parseDuration('AUTHGATE_BACKEND_TIMEOUT', get('AUTHGATE_BACKEND_TIMEOUT')!),
    trustedProxies: get('AUTHGATE_TRUSTED_PROXIES') === undefined ? [] : parseCidrList('AUTHGATE_TRUSTED_PROXIES', get('AUTHGATE_TRUSTED_PROXIES')!),
    logLevel,
    backendConnections: get('AUTHGATE_BACKEND_CONNECTIONS') === undefined ? 128 : parseIntIn('AUTHGATE_BACKEND_CONNECTIONS', get('AUTHGATE_BACKEND_CONNECTIONS')!, 1, 65535),
  }
}
