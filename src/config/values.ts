import { isIP } from 'node:net'
import { availableParallelism } from 'node:os'
import { OPTIONAL_GROUPS, type OptionalGroup } from '../core/route-groups.ts'
import { normaliseBackendUrl } from '../core/backend.ts'
import { notHttp } from '../core/url-message.ts'
import { AuthgateConfigError, OFF_WORDS, parseBoolean, type Env } from './env.ts'
import { settingValue } from './schema.ts'
import { parseServePath } from './serve-path.ts'

/**
 * The parsers of settings' text: each takes the variable's name (for its errors) and the text, and
 * returns the value or throws an AuthgateConfigError naming the variable.
 */

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
export const MAX_DURATION_MS = 2 ** 31 - 1

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
export function parseTracing(variable: string, raw: string): 'off' | 'otlp' {
  const value = raw.trim().toLowerCase()
  if (value === 'otlp') return 'otlp'
  if (OFF_WORDS.has(value)) return 'off'
  throw new AuthgateConfigError(variable, `expected off or otlp, got ${JSON.stringify(raw)}`)
}

export const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])

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
export function parseHeaderName(variable: string, raw: string): string {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(raw))
    throw new AuthgateConfigError(variable, `not a header name: ${JSON.stringify(raw)}`)
  return raw.toLowerCase()
}

export function servePathOrOff(variable: string, raw: string): string | false {
  return OFF_WORDS.has(raw.toLowerCase()) ? false : parseServePath(variable, raw)
}

/**
 * How one setting is read: `parse` from the environment's text, `check` from a value code gives
 * (the environment's parsed value passes `check` too). Both name what they refuse as told.
 */
export interface SettingValue<T> {
  parse(variable: string, raw: string): T
  check(name: string, value: unknown): T
}

const fail = (name: string, message: string): never => {
  throw new AuthgateConfigError(name, message)
}

const isOffWord = (raw: string) => OFF_WORDS.has(raw.trim().toLowerCase())

export const integer = (min: number, max: number): SettingValue<number> => ({
  parse: (variable, raw) => {
    const s = raw.trim()
    if (!/^[+-]?\d+$/.test(s))
      fail(variable, `expected an integer between ${min} and ${max}, got ${JSON.stringify(raw)}`)
    const n = Number(s)
    if (n < min || n > max) fail(variable, `must be between ${min} and ${max}, got ${n}`)
    return n
  },
  check: (name, v) => {
    if (typeof v !== 'number' || !Number.isInteger(v))
      fail(name, `must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`)
    // The text's message for an integer out of range, so both paths read alike.
    if ((v as number) < min || (v as number) > max) fail(name, `must be between ${min} and ${max}, got ${String(v)}`)
    return v as number
  },
})

/** Milliseconds; in text with a unit. `zero`: 0 is allowed, and in text also `0` or a word for off. */
export const duration = (zero = false): SettingValue<number> => ({
  parse: (variable, raw) =>
    zero && (raw.trim() === '0' || isOffWord(raw)) ? 0 : parseDuration(variable, raw, { allowZero: zero }),
  check: (name, v) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (v === 0 && !zero))
      fail(name, `must be a ${zero ? 'non-negative' : 'positive'} number of milliseconds, got ${JSON.stringify(v)}`)
    if ((v as number) > MAX_DURATION_MS) fail(name, `must be at most 24 days, got ${String(v)} ms`)
    return v as number
  },
})

export const size: SettingValue<number> = {
  parse: parseSize,
  check: integer(1, Number.MAX_SAFE_INTEGER).check,
}

const nonEmpty = (name: string, v: unknown): string =>
  typeof v === 'string' && v.trim() !== '' ? v : fail(name, `must be a non-empty string, got ${JSON.stringify(v)}`)

/** A string the parser reads the same from text and from code. */
export const textWith = <T>(parse: (variable: string, raw: string) => T): SettingValue<T> => ({
  parse,
  check: (name, v) => parse(name, nonEmpty(name, v)),
})

export const text: SettingValue<string> = textWith((_, raw) => raw)

/** A comma list in text, an array of strings in code; a word for off is the empty list. */
export const list = <T>(parse: (variable: string, raw: string) => T[]): SettingValue<T[]> => ({
  parse: (variable, raw) => (isOffWord(raw) ? [] : parse(variable, raw)),
  check: (name, v) =>
    Array.isArray(v) && v.every((x) => typeof x === 'string')
      ? parse(name, v.join(','))
      : fail(name, `must be an array of strings, got ${JSON.stringify(v)}`),
})

export const boolean: SettingValue<boolean> = {
  parse: (variable, raw) => parseBoolean(variable, raw),
  check: (name, v) => (typeof v === 'boolean' ? v : fail(name, `must be true or false, got ${JSON.stringify(v)}`)),
}

/** A served path, or off (`false` in code, a word for off in text). */
export const pathOrOff: SettingValue<string | false> = {
  parse: servePathOrOff,
  check: (name, v) =>
    v === false
      ? false
      : typeof v === 'string'
        ? parseServePath(name, v)
        : fail(name, `must be a path or false, got ${JSON.stringify(v)}`),
}

export const backendUrl: SettingValue<URL> = {
  parse: parseBackendUrl,
  check: (name, v) =>
    v instanceof URL || typeof v === 'string'
      ? normaliseBackendUrl(name, v)
      : fail(name, `must be a URL, got ${JSON.stringify(v)}`),
}

export const prefix: SettingValue<string> = {
  parse: parsePrefix,
  check: (name, v) =>
    typeof v === 'string' ? parsePrefix(name, v) : fail(name, `must be a string like /auth, got ${JSON.stringify(v)}`),
}

export const logLevel: SettingValue<string> = {
  parse: (_, raw) => raw,
  check: (name, v) =>
    typeof v === 'string' && LOG_LEVELS.has(v) ? v : fail(name, `must be one of ${[...LOG_LEVELS].join(', ')}`),
}

/** One of a few words, in any case in text; exactly one of them in code. */
export const oneOf = <const W extends string>(words: readonly W[]): SettingValue<W> => {
  const expected =
    words.length === 2 ? `"${words[0]}" or "${words[1]}"` : `one of ${words.map((w) => `"${w}"`).join(', ')}`
  const check = (name: string, v: unknown): W =>
    typeof v === 'string' && (words as readonly string[]).includes(v)
      ? (v as W)
      : fail(name, `must be ${expected}, got ${JSON.stringify(v)}`)
  return { parse: (variable, raw) => check(variable, raw.trim().toLowerCase()), check }
}

/** A process count from 1 to 256, or `auto` (text) for one per core. */
export const workerCount: SettingValue<number> = {
  parse: (variable, raw) => {
    const v = raw.trim()
    if (v.toLowerCase() === 'auto') return availableParallelism()
    if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 256)
      fail(variable, `expected a count from 1 to 256 or "auto", got ${JSON.stringify(raw)}`)
    return Number(v)
  },
  check: integer(1, 256).check,
}

/** An http(s) URL, kept as written but for its trailing slashes. */
export const httpUrl: SettingValue<string> = textWith((variable, raw) => {
  const v = raw.trim()
  let url: URL
  try {
    url = new URL(v)
  } catch {
    return fail(variable, `not a URL: ${JSON.stringify(v)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(variable, notHttp(v))
  return v.replace(/\/+$/, '')
})

/**
 * One setting read from the environment through its value type: the variable's text, else the
 * settings schema's default (src/config/schema.ts), parsed; undefined when it has neither.
 */
export function readSetting<T>(env: Env, variable: string, value: SettingValue<T>): T | undefined {
  const raw = settingValue(env, variable)
  return raw === undefined ? undefined : value.parse(variable, raw)
}
