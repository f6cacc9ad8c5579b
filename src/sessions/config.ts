import { parseOrigins } from '../config.ts'
import { AuthgateConfigError, envValue, isOff, type Env } from '../config/env.ts'
import { settingValue } from '../config/schema.ts'
import { refuseUnknownOptions } from '../config/known-options.ts'
import { boolean, duration, list, oneOf, readSetting, text, type SettingValue } from '../config/values.ts'
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
  const cookieName = options.cookieName ?? byDefault('cookieName')
  if (!COOKIE_NAME.test(cookieName))
    throw new AuthgateConfigError(names.cookieName, `not a cookie name: ${JSON.stringify(cookieName)}`)
  const secure = options.secure ?? true
  // Browsers refuse a `__Host-` or `__Secure-` cookie without Secure: it would silently never be set.
  if (!secure && /^__(host|secure)-/i.test(cookieName))
    throw new AuthgateConfigError(names.secure, `a ${cookieName.split('-')[0]}- cookie must be Secure`)
  const lifetimeMs = options.lifetimeMs ?? byDefault('lifetimeMs')
  const idleTimeoutMs = options.idleTimeoutMs ?? byDefault('idleTimeoutMs')
  if (lifetimeMs < 60_000) throw new AuthgateConfigError(names.lifetimeMs, 'must be at least a minute')
  if (idleTimeoutMs < 60_000) throw new AuthgateConfigError(names.idleTimeoutMs, 'must be at least a minute')
  const revalidateMs = options.revalidateMs ?? byDefault('revalidateMs')
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

type SessionSettingKey = Exclude<keyof SessionOptions, 'store'>

/**
 * One descriptor per option: its variable (default and help in src/config/schema.ts) and its value
 * type, which parses the variable's text and checks the value code gives (src/config/values.ts).
 * The option names, the variable names, the code checks and the environment's reading derive from it.
 */
const SESSION_SETTINGS: {
  readonly [K in SessionSettingKey]-?: { variable: string; value: SettingValue<NonNullable<SessionOptions[K]>> }
} = {
  mode: { variable: 'AUTHGATE_SESSIONS', value: oneOf(['on', 'request']) },
  keys: {
    variable: 'AUTHGATE_SESSION_KEYS',
    value: {
      parse: parseSessionKeys,
      check: (name, v) =>
        Array.isArray(v)
          ? (v as SessionOptions['keys'])
          : fail(name, `must be an array of keys ("id:base64"), got ${JSON.stringify(v)}`),
    },
  },
  cookieName: { variable: 'AUTHGATE_SESSION_COOKIE_NAME', value: text },
  secure: { variable: 'AUTHGATE_SESSION_COOKIE_SECURE', value: boolean },
  lifetimeMs: { variable: 'AUTHGATE_SESSION_LIFETIME', value: duration() },
  idleTimeoutMs: { variable: 'AUTHGATE_SESSION_IDLE_TIMEOUT', value: duration() },
  allowedOrigins: { variable: 'AUTHGATE_SESSION_ORIGINS', value: list(parseOrigins) },
  revalidateMs: { variable: 'AUTHGATE_SESSION_REVALIDATE', value: duration() },
  oauthConsentMs: { variable: 'AUTHGATE_SESSION_OAUTH_CONSENT', value: duration() },
}

const fail = (name: string, message: string): never => {
  throw new AuthgateConfigError(name, message)
}

/** One option from the environment: its variable's text or the schema's default, parsed. */
function read<K extends SessionSettingKey>(env: Env, key: K): NonNullable<SessionOptions[K]> | undefined {
  const { variable, value } = SESSION_SETTINGS[key] as {
    variable: string
    value: SettingValue<NonNullable<SessionOptions[K]>>
  }
  return readSetting(env, variable, value)
}

/** The documented default of an option that has one. */
const byDefault = <K extends SessionSettingKey>(key: K): NonNullable<SessionOptions[K]> => read({}, key)!

/** Refuses an unknown option (with its did-you-mean) and a value of the wrong type, naming it. */
function checkSessionOptions(options: SessionOptions): void {
  refuseUnknownOptions(options, [...Object.keys(SESSION_SETTINGS), 'store'], 'sessions.')
  for (const [key, value] of Object.entries(options)) {
    // The store's shape is the type's to check (tests and custom stores build it).
    if (value === undefined || key === 'store') continue
    SESSION_SETTINGS[key as SessionSettingKey].value.check(`sessions.${key}`, value)
  }
}

const namesBy = (name: (key: string, variable: string) => string) =>
  Object.fromEntries(Object.entries(SESSION_SETTINGS).map(([k, d]) => [k, name(k, d.variable)])) as {
    readonly [K in SessionSettingKey]: string
  }
const OPTION_NAMES = namesBy((key) => `sessions.${key}`)
const ENV_OPTION_NAMES = namesBy((_, variable) => variable)

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
  const keys = read(env, 'keys')
  if (keys === undefined)
    throw new AuthgateConfigError(
      'AUTHGATE_SESSION_KEYS',
      'cookie sessions need an encryption key: `<id>:<32 bytes in base64>` (e.g. `k1:` + `openssl rand -base64 32`)',
    )
  const allowedOrigins =
    envValue(env, 'AUTHGATE_SESSION_ORIGINS') !== undefined
      ? read(env, 'allowedOrigins')!
      : corsOrigins.filter((o) => o !== '*')
  const consentRaw = setting('AUTHGATE_SESSION_OAUTH_CONSENT')
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
      timeoutMs: readSetting(env, 'AUTHGATE_SESSION_REDIS_TIMEOUT', duration())!,
    }
  } else
    throw new AuthgateConfigError(
      'AUTHGATE_SESSION_STORE',
      `must be "memory" or "redis", got ${JSON.stringify(storeKind)}`,
    )
  return resolveSessionConfig(
    {
      mode,
      keys,
      cookieName: read(env, 'cookieName')!,
      secure: read(env, 'secure')!,
      lifetimeMs: read(env, 'lifetimeMs')!,
      idleTimeoutMs: read(env, 'idleTimeoutMs')!,
      allowedOrigins,
      revalidateMs: read(env, 'revalidateMs')!,
      ...(isOff(consentRaw) ? {} : { oauthConsentMs: read(env, 'oauthConsentMs')! }),
      store,
    },
    ENV_OPTION_NAMES,
  )
}
