import { parseDuration, parseOrigins } from '../config.ts'
import { AuthgateConfigError, envValue, isOff, parseBoolean, type Env } from '../config/env.ts'
import { settingValue } from '../config/schema.ts'
import { refuseUnknownOptions } from '../config/known-options.ts'
import { boolean, duration, list, text } from '../config/values.ts'
import { loadRedisConnection, type RedisSettings } from '../ratelimit/config.ts'
import { parseSessionKeys, type SessionKey } from './crypto.ts'

/**
 * When session answers become cookies: `off` never; `on` for every request; `request` only for
 * requests that ask with `X-Authgate-Session: cookie` (an application moving over page by page).
 */
export type CookieSessionMode = 'off' | 'on' | 'request'

/** The request header a page sends to ask for a cookie session in `request` mode. */
export const SESSION_MODE_HEADER = 'x-authgate-session'

export interface SessionConfig {
  mode: Exclude<CookieSessionMode, 'off'>
  /** The first key encrypts; every key decrypts (rotation: put the new key first, drop the old later). */
  keys: SessionKey[]
  cookieName: string
  /** `false` only for a cookie name without the `__Host-` prefix (plain-http development). */
  secure: boolean
  /** Longest life of a stored session, from sign-in (at most the refresh token's lifetime at Supabase Auth). */
  lifetimeMs: number
  /** A session unused for this long is forgotten. */
  idleTimeoutMs: number
  /** Origins allowed to send cookie-authenticated unsafe requests, besides the request's own. */
  allowedOrigins: string[]
  /**
   * Longest time since Supabase Auth last confirmed a session (a refresh, or `GET /user`) before
   * authgate asks again on a request that relies on it alone (the application's protected routes,
   * `GET /session`): how long a session signed out elsewhere still reads as signed in here.
   */
  revalidateMs: number
  /**
   * The OAuth consent routes take the cookie only of a session signed in at most this long ago, or
   * on a same-origin top-level navigation; undefined: never (the default).
   */
  oauthConsentMs: number | undefined
  /** Where sessions live: this process, or Redis (shared by replicas, kept across restarts). */
  store: { kind: 'memory'; maxEntries: number } | ({ kind: 'redis' } & RedisSettings)
}

/** What code may pass (the plugin's `sessions` option): the settings, with defaults for the rest. */
export interface SessionOptions {
  mode?: Exclude<CookieSessionMode, 'off'>
  /** `kid:base64-key` strings or parsed keys; required. */
  keys: Array<SessionKey | string>
  cookieName?: string
  secure?: boolean
  lifetimeMs?: number
  idleTimeoutMs?: number
  allowedOrigins?: string[]
  revalidateMs?: number
  /** Absent: the OAuth consent routes refuse the cookie. */
  oauthConsentMs?: number
  store?: SessionConfig['store']
}

const COOKIE_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** Checks the options and fills in the defaults; a bad value is an `AuthgateConfigError` naming the option. */
export function resolveSessionConfig(options: SessionOptions, names = OPTION_NAMES): SessionConfig {
  // From code (the environment's reader builds its object itself): every option is known and of its type.
  if (names === OPTION_NAMES) checkSessionOptions(options)
  const keys = options.keys.map((k) => (typeof k === 'string' ? parseSessionKeys(names.keys, k)[0]! : k))
  if (keys.length === 0) throw new AuthgateConfigError(names.keys, 'cookie sessions need at least one key')
  const ids = new Set<string>()
  for (const key of keys) {
    if (key.key.length !== 32) throw new AuthgateConfigError(names.keys, `key ${key.id} is not 32 bytes`)
    if (ids.has(key.id)) throw new AuthgateConfigError(names.keys, `key id ${key.id} is given twice`)
    ids.add(key.id)
  }
  const cookieName = options.cookieName ?? settingValue({}, 'AUTHGATE_SESSION_COOKIE_NAME')!
  if (!COOKIE_NAME.test(cookieName))
    throw new AuthgateConfigError(names.cookieName, `not a cookie name: ${JSON.stringify(cookieName)}`)
  const secure = options.secure ?? true
  // Browsers refuse a `__Host-` or `__Secure-` cookie without Secure: it would silently never be set.
  if (!secure && /^__(host|secure)-/i.test(cookieName))
    throw new AuthgateConfigError(names.secure, `a ${cookieName.split('-')[0]}- cookie must be Secure`)
  const lifetimeMs =
    options.lifetimeMs ?? parseDuration(names.lifetimeMs, settingValue({}, 'AUTHGATE_SESSION_LIFETIME')!)
  const idleTimeoutMs =
    options.idleTimeoutMs ?? parseDuration(names.idleTimeoutMs, settingValue({}, 'AUTHGATE_SESSION_IDLE_TIMEOUT')!)
  if (lifetimeMs < 60_000) throw new AuthgateConfigError(names.lifetimeMs, 'must be at least a minute')
  if (idleTimeoutMs < 60_000) throw new AuthgateConfigError(names.idleTimeoutMs, 'must be at least a minute')
  const revalidateMs =
    options.revalidateMs ?? parseDuration(names.revalidateMs, settingValue({}, 'AUTHGATE_SESSION_REVALIDATE')!)
  if (revalidateMs < 1000) throw new AuthgateConfigError(names.revalidateMs, 'must be at least a second')
  const oauthConsentMs = options.oauthConsentMs
  if (oauthConsentMs !== undefined && !(oauthConsentMs > 0))
    throw new AuthgateConfigError(names.oauthConsentMs, 'must be a positive duration')
  const allowedOrigins = options.allowedOrigins ?? []
  if (allowedOrigins.includes('*'))
    throw new AuthgateConfigError(names.allowedOrigins, 'cookie sessions need a list of origins, not `*`')
  return {
    mode: options.mode ?? 'on',
    keys,
    cookieName,
    secure,
    lifetimeMs,
    idleTimeoutMs,
    allowedOrigins,
    revalidateMs,
    oauthConsentMs,
    store: options.store ?? { kind: 'memory', maxEntries: 100_000 },
  }
}

// Each option given in code and the value type its variable is read with (src/config/values.ts).
const CODE_CHECKS: { readonly [K in keyof SessionOptions]-?: ((name: string, v: unknown) => unknown) | null } = {
  mode: (name, v) =>
    v === 'on' || v === 'request' ? v : fail(name, `must be "on" or "request", got ${JSON.stringify(v)}`),
  keys: (name, v) =>
    Array.isArray(v) ? v : fail(name, `must be an array of keys ("id:base64"), got ${JSON.stringify(v)}`),
  cookieName: text.check,
  secure: boolean.check,
  lifetimeMs: duration().check,
  idleTimeoutMs: duration().check,
  allowedOrigins: list(parseOrigins).check,
  revalidateMs: duration().check,
  oauthConsentMs: duration().check,
  // The store's shape is the type's to check (tests and custom stores build it).
  store: null,
}

const fail = (name: string, message: string): never => {
  throw new AuthgateConfigError(name, message)
}

/** Refuses an unknown option (with its did-you-mean) and a value of the wrong type, naming it. */
function checkSessionOptions(options: SessionOptions): void {
  refuseUnknownOptions(options, Object.keys(CODE_CHECKS), 'sessions.')
  for (const [key, value] of Object.entries(options)) {
    const check = CODE_CHECKS[key as keyof SessionOptions]
    if (value !== undefined && check !== null) check(`sessions.${key}`, value)
  }
}

const OPTION_NAMES = {
  keys: 'sessions.keys',
  cookieName: 'sessions.cookieName',
  secure: 'sessions.secure',
  lifetimeMs: 'sessions.lifetimeMs',
  idleTimeoutMs: 'sessions.idleTimeoutMs',
  allowedOrigins: 'sessions.allowedOrigins',
  revalidateMs: 'sessions.revalidateMs',
  oauthConsentMs: 'sessions.oauthConsentMs',
}

const ENV_OPTION_NAMES = {
  keys: 'AUTHGATE_SESSION_KEYS',
  cookieName: 'AUTHGATE_SESSION_COOKIE_NAME',
  secure: 'AUTHGATE_SESSION_COOKIE_SECURE',
  lifetimeMs: 'AUTHGATE_SESSION_LIFETIME',
  idleTimeoutMs: 'AUTHGATE_SESSION_IDLE_TIMEOUT',
  allowedOrigins: 'AUTHGATE_SESSION_ORIGINS',
  revalidateMs: 'AUTHGATE_SESSION_REVALIDATE',
  oauthConsentMs: 'AUTHGATE_SESSION_OAUTH_CONSENT',
}

/**
 * The cookie-session settings from the environment (undefined when AUTHGATE_SESSIONS is `off`).
 * `corsOrigins` are allowed for cookie-authenticated requests unless AUTHGATE_SESSION_ORIGINS is given.
 */
export function loadSessionConfig(env: Env, corsOrigins: readonly string[] = []): SessionConfig | undefined {
  const setting = (name: string) => settingValue(env, name)!
  const mode = setting('AUTHGATE_SESSIONS').toLowerCase()
  if (isOff(mode)) return undefined
  if (mode !== 'on' && mode !== 'request')
    throw new AuthgateConfigError('AUTHGATE_SESSIONS', `must be "off", "on" or "request", got ${JSON.stringify(mode)}`)
  const rawKeys = envValue(env, 'AUTHGATE_SESSION_KEYS')
  if (rawKeys === undefined)
    throw new AuthgateConfigError(
      'AUTHGATE_SESSION_KEYS',
      'cookie sessions need an encryption key: `<id>:<32 bytes in base64>` (e.g. `k1:` + `openssl rand -base64 32`)',
    )
  const secure = parseBoolean('AUTHGATE_SESSION_COOKIE_SECURE', setting('AUTHGATE_SESSION_COOKIE_SECURE'))
  const originsRaw = envValue(env, 'AUTHGATE_SESSION_ORIGINS')
  const allowedOrigins = originsRaw
    ? parseOrigins('AUTHGATE_SESSION_ORIGINS', originsRaw)
    : corsOrigins.filter((o) => o !== '*')
  const consentRaw = setting('AUTHGATE_SESSION_OAUTH_CONSENT').trim()
  const storeKind = setting('AUTHGATE_SESSION_STORE').toLowerCase()
  let store: SessionConfig['store']
  if (storeKind === 'memory') store = { kind: 'memory', maxEntries: 100_000 }
  else if (storeKind === 'redis') {
    // The rate limiter's connection settings (URL, Sentinel password, TLS CA), with the store's own prefix and timeout.
    const redis = loadRedisConnection(env)
    if (redis === undefined) throw new AuthgateConfigError('AUTHGATE_SESSION_STORE', '`redis` needs AUTHGATE_REDIS_URL')
    store = {
      kind: 'redis',
      ...redis,
      keyPrefix: setting('AUTHGATE_SESSION_KEY_PREFIX'),
      timeoutMs: parseDuration('AUTHGATE_SESSION_REDIS_TIMEOUT', setting('AUTHGATE_SESSION_REDIS_TIMEOUT')),
    }
  } else
    throw new AuthgateConfigError(
      'AUTHGATE_SESSION_STORE',
      `must be "memory" or "redis", got ${JSON.stringify(storeKind)}`,
    )
  return resolveSessionConfig(
    {
      mode,
      keys: parseSessionKeys('AUTHGATE_SESSION_KEYS', rawKeys),
      cookieName: setting('AUTHGATE_SESSION_COOKIE_NAME'),
      secure,
      lifetimeMs: parseDuration('AUTHGATE_SESSION_LIFETIME', setting('AUTHGATE_SESSION_LIFETIME')),
      idleTimeoutMs: parseDuration('AUTHGATE_SESSION_IDLE_TIMEOUT', setting('AUTHGATE_SESSION_IDLE_TIMEOUT')),
      allowedOrigins,
      revalidateMs: parseDuration('AUTHGATE_SESSION_REVALIDATE', setting('AUTHGATE_SESSION_REVALIDATE')),
      ...(isOff(consentRaw) ? {} : { oauthConsentMs: parseDuration('AUTHGATE_SESSION_OAUTH_CONSENT', consentRaw) }),
      store,
    },
    ENV_OPTION_NAMES,
  )
}
