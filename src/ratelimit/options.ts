import { AuthgateConfigError, type Env } from '../config/env.ts'
import { refuseUnknownOptions } from '../config/known-options.ts'
import { loadRateLimitConfig, RATE_LIMIT_VALUES, type LimitableRoute, type RateLimitConfig } from './config.ts'

/**
 * Rate limiting as code gives it: any of these, the rest at the documented default (the settings
 * table's). Each option is its environment variable's value in code's own types, checked and
 * written as that variable's text, then read by the one reader of the variables, so code and
 * environment accept exactly the same (an error names the option as given: `rateLimit.rate`).
 */
export interface RateLimitOptions {
  /** AUTHGATE_RATE_LIMIT: `COUNT/WINDOW[;burst=N]`, e.g. `30/5m`. */
  rate?: string
  /** AUTHGATE_RATE_LIMITED_ROUTES: the routes limited per client IP (`POST /signup`), or false for none. */
  limitedRoutes?: readonly string[] | false
  /** AUTHGATE_RATE_LIMIT_ROUTES: per-route rates, `{ 'POST /token': '100/5m' }`; false takes the route off. */
  routeRates?: Readonly<Record<string, string | false>>
  /** AUTHGATE_REDIS_URL: share the buckets across replicas; absent: in memory. */
  redisUrl?: string
  /** AUTHGATE_REDIS_SENTINEL_PASSWORD */
  redisSentinelPassword?: string
  /** AUTHGATE_REDIS_TLS_CA: path of a PEM file. */
  redisTlsCa?: string
  /** AUTHGATE_REDIS_KEY_PREFIX */
  redisKeyPrefix?: string
  /** AUTHGATE_REDIS_TIMEOUT, in milliseconds. */
  redisTimeoutMs?: number
  /** AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR */
  onRedisError?: 'open' | 'closed'
  /** AUTHGATE_RATE_LIMIT_IPV6_PREFIX */
  ipv6PrefixLength?: number
  /** AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS */
  memoryMaxKeys?: number
  /** AUTHGATE_ACCOUNT_RATE_LIMIT, or false for none. */
  accountRate?: string | false
  /** AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT, or false for none. */
  accountMessageRate?: string | false
  /** AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: per-route per-account rates; false takes the route off. */
  accountRouteRates?: Readonly<Record<string, string | false>>
  /** AUTHGATE_ACCOUNT_KEY_SECRET */
  accountKeySecret?: string
  /** AUTHGATE_ACCOUNT_DEVICE_COOKIE */
  deviceCookie?: boolean
  /** AUTHGATE_EMAIL_BUDGET: Supabase Auth's e-mails per hour, or false for no budget. */
  emailBudget?: number | false
  /** AUTHGATE_SMS_BUDGET, likewise. */
  smsBudget?: number | false
  /** AUTHGATE_BUDGET_CLIENT_SHARE, as a fraction (0.2 for 20%). */
  budgetClientShare?: number
}

type Checker = (name: string, value: unknown) => string

const fail = (name: string, message: string): never => {
  throw new AuthgateConfigError(name, message)
}
const text: Checker = (name, v) =>
  typeof v === 'string' && v.trim() !== '' ? v : fail(name, `must be a non-empty string, got ${JSON.stringify(v)}`)
const orOff =
  (inner: Checker): Checker =>
  (name, v) =>
    v === false ? 'off' : inner(name, v)
const count: Checker = (name, v) =>
  typeof v === 'number' && Number.isInteger(v) ? String(v) : fail(name, `must be an integer, got ${JSON.stringify(v)}`)
const routeList: Checker = (name, v) =>
  Array.isArray(v) && v.every((r) => typeof r === 'string')
    ? v.length === 0
      ? 'none'
      : v.join(',')
    : fail(name, `must be an array of "METHOD /template" strings, got ${JSON.stringify(v)}`)
const routeRates: Checker = (name, v) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return fail(name, `must be an object of "METHOD /template": rate, got ${JSON.stringify(v)}`)
  return Object.entries(v as Record<string, unknown>)
    .map(([route, rate]) => `${route}=${orOff(text)(`${name}.${route}`, rate)}`)
    .join(',')
}

/** Checked by the value type the environment's reader parses the variable with, then written as its text. */
const valueOf =
  (variable: keyof typeof RATE_LIMIT_VALUES, unit = ''): Checker =>
  (name, v) =>
    `${RATE_LIMIT_VALUES[variable].check(name, v)}${unit}`

/** Each option: its variable (name, default and help in src/config/schema.ts) and its code checker. */
const OPTIONS: { readonly [K in keyof RateLimitOptions]-?: readonly [variable: string, check: Checker] } = {
  rate: ['AUTHGATE_RATE_LIMIT', text],
  limitedRoutes: ['AUTHGATE_RATE_LIMITED_ROUTES', orOff(routeList)],
  routeRates: ['AUTHGATE_RATE_LIMIT_ROUTES', routeRates],
  redisUrl: ['AUTHGATE_REDIS_URL', valueOf('AUTHGATE_REDIS_URL')],
  redisSentinelPassword: ['AUTHGATE_REDIS_SENTINEL_PASSWORD', valueOf('AUTHGATE_REDIS_SENTINEL_PASSWORD')],
  redisTlsCa: ['AUTHGATE_REDIS_TLS_CA', valueOf('AUTHGATE_REDIS_TLS_CA')],
  redisKeyPrefix: ['AUTHGATE_REDIS_KEY_PREFIX', valueOf('AUTHGATE_REDIS_KEY_PREFIX')],
  redisTimeoutMs: ['AUTHGATE_REDIS_TIMEOUT', valueOf('AUTHGATE_REDIS_TIMEOUT', 'ms')],
  onRedisError: ['AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR', valueOf('AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR')],
  ipv6PrefixLength: ['AUTHGATE_RATE_LIMIT_IPV6_PREFIX', valueOf('AUTHGATE_RATE_LIMIT_IPV6_PREFIX')],
  memoryMaxKeys: ['AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS', valueOf('AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS')],
  accountRate: ['AUTHGATE_ACCOUNT_RATE_LIMIT', orOff(text)],
  accountMessageRate: ['AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT', orOff(text)],
  accountRouteRates: ['AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES', routeRates],
  accountKeySecret: ['AUTHGATE_ACCOUNT_KEY_SECRET', text],
  deviceCookie: [
    'AUTHGATE_ACCOUNT_DEVICE_COOKIE',
    (name, v) => (typeof v === 'boolean' ? String(v) : fail(name, `must be true or false, got ${JSON.stringify(v)}`)),
  ],
  emailBudget: ['AUTHGATE_EMAIL_BUDGET', orOff(count)],
  smsBudget: ['AUTHGATE_SMS_BUDGET', orOff(count)],
  budgetClientShare: [
    'AUTHGATE_BUDGET_CLIENT_SHARE',
    (name, v) =>
      typeof v === 'number' && Number.isFinite(v) && v >= 0
        ? `${Math.round(v * 1e6) / 1e4}%`
        : fail(name, `must be a fraction above 0 and at most 1, got ${JSON.stringify(v)}`),
  ],
}

/**
 * The rate-limit configuration for options given in code, through the environment's reader:
 * unknown options are refused with a did-you-mean, each value checked for its type and written as
 * its variable's text, and what the reader refuses is reported under the option's name.
 */
export function resolveRateLimitOptions(
  options: RateLimitOptions,
  table: readonly LimitableRoute[],
  where = 'rateLimit.',
): RateLimitConfig {
  refuseUnknownOptions(options, Object.keys(OPTIONS), where)
  const env: Env = {}
  const optionOf = new Map<string, string>()
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue
    const [variable, check] = OPTIONS[key as keyof RateLimitOptions]
    env[variable] = check(where + key, value)
    optionOf.set(variable, where + key)
  }
  try {
    return loadRateLimitConfig(env, table)
  } catch (err) {
    if (!(err instanceof AuthgateConfigError)) throw err
    const option = optionOf.get(err.option)
    if (option === undefined) throw err
    throw new AuthgateConfigError(option, err.message.slice(err.option.length + 2))
  }
}
