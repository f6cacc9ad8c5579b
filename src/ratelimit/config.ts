import { readFileSync } from 'node:fs'
import { parseRouteKey } from '../core/route-key.ts'
import { AuthgateConfigError, envValue, isOff, type Env } from '../config/env.ts'
import { settingValue } from '../config/schema.ts'
import { duration, integer, oneOf, readSetting, text, type SettingValue } from '../config/values.ts'
import {
  loadAccountLimits,
  loadBudgets,
  type AccountLimitConfig,
  type BudgetConfig,
  type LimitableRoute,
} from './abuse-config.ts'
import { parseRate, samePolicy, type RateLimitPolicy } from './policy.ts'
import { parseRedisUrl } from '../core/redis-url.ts'
import type { RedisSettings } from '../core/redis.ts'

export type { LimitableRoute, RedisSettings }

export interface RateLimitConfig {
  defaultPolicy: RateLimitPolicy
  /** Limited routes only, keyed `METHOD /template` (template relative to the prefix). */
  routes: Map<string, RateLimitPolicy>
  redis: RedisSettings | undefined
  /** What a limited request gets while Redis cannot answer. */
  onRedisError: 'open' | 'closed'
  /** IPv6 clients are keyed by this prefix: one host usually holds a whole /64. */
  ipv6PrefixLength: number
  /** Memory store only: most buckets held at once; the least recently seen go first. */
  memoryMaxKeys: number
  /** Limits per account (e-mail or phone of the body), besides per client; absent: none. */
  accounts?: AccountLimitConfig | undefined
  /** Cluster-wide e-mail and SMS budgets mirroring Supabase Auth's; absent: none. */
  budgets?: BudgetConfig | undefined
}

export const DEFAULT_RATE = settingValue({}, 'AUTHGATE_RATE_LIMIT')!

/** `post  /signup` → `POST /signup`; undefined when it is not `METHOD /path`. */
const normalizeRoute = (raw: string): string | undefined => parseRouteKey(raw)?.key

/** Policy identifier for a route-specific policy: `/passkeys/{id}` → `passkeys-id`. */
export function policyNameFor(template: string): string {
  return (
    template
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'root'
  )
}

/** The template of a normalised route name (the bucket it counts in). */
const templateOf = (route: string): string => parseRouteKey(route)?.path ?? route

function routeList(variable: string, raw: string, known: Set<string>): string[] {
  const out: string[] = []
  for (const item of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const route = normalizeRoute(item)
    if (!route) throw new AuthgateConfigError(variable, `expected "METHOD /template", got ${JSON.stringify(item)}`)
    if (!known.has(route))
      throw new AuthgateConfigError(
        variable,
        `no such route ${JSON.stringify(route)} (routes are relative to the prefix, e.g. "POST /signup")`,
      )
    out.push(route)
  }
  return out
}

/**
 * Reads the rate-limit variables for the mounted routes of `table` (the route table's word on
 * each: limited by default, per account, sending messages), so a typo in a route stops start-up
 * instead of silently leaving a route unlimited.
 */
export function loadRateLimitConfig(env: Env, table: readonly LimitableRoute[]): RateLimitConfig {
  const get = (name: string) => envValue(env, name)
  // Defaults come from the settings schema (src/config/schema.ts).
  const setting = (name: string) => settingValue(env, name)!
  const known = new Set(table.map((r) => r.key))
  const defaultPolicy = parseRate('AUTHGATE_RATE_LIMIT', setting('AUTHGATE_RATE_LIMIT'), 'default')

  const listed = get('AUTHGATE_RATE_LIMITED_ROUTES')
  const limited =
    listed === undefined
      ? table.filter((r) => r.rateLimited).map((r) => r.key)
      : isOff(listed)
        ? []
        : routeList('AUTHGATE_RATE_LIMITED_ROUTES', listed, known)
  const routes = new Map<string, RateLimitPolicy>(limited.map((r) => [r, defaultPolicy]))

  const overrides = get('AUTHGATE_RATE_LIMIT_ROUTES')
  const seen = new Set<string>()
  for (const item of (overrides ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = item.indexOf('=')
    if (eq < 0)
      throw new AuthgateConfigError(
        'AUTHGATE_RATE_LIMIT_ROUTES',
        `expected "METHOD /template=RATE" or "METHOD /template=off", got ${JSON.stringify(item)}`,
      )
    const [route] = routeList('AUTHGATE_RATE_LIMIT_ROUTES', item.slice(0, eq), known)
    const rate = item.slice(eq + 1).trim()
    if (seen.has(route!)) throw new AuthgateConfigError('AUTHGATE_RATE_LIMIT_ROUTES', `${route} is given twice`)
    seen.add(route!)
    if (isOff(rate)) routes.delete(route!)
    else routes.set(route!, parseRate('AUTHGATE_RATE_LIMIT_ROUTES', rate, policyNameFor(templateOf(route!))))
  }

  // Routes sharing a template share a bucket (docs/decisions.md, D11), so they must share a rate too.
  const byTemplate = new Map<string, [string, RateLimitPolicy]>()
  for (const [route, policy] of routes) {
    const other = byTemplate.get(templateOf(route))
    if (other && !samePolicy(other[1], policy)) {
      throw new AuthgateConfigError(
        'AUTHGATE_RATE_LIMIT_ROUTES',
        `${other[0]} and ${route} share one bucket (same template) and need the same rate`,
      )
    }
    if (other) routes.set(route, other[1])
    else byTemplate.set(templateOf(route), [route, policy])
  }

  return {
    defaultPolicy,
    routes,
    redis: loadRedisConnection(env),
    onRedisError: read(env, 'AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR'),
    ipv6PrefixLength: read(env, 'AUTHGATE_RATE_LIMIT_IPV6_PREFIX'),
    memoryMaxKeys: read(env, 'AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS'),
    accounts: loadAccountLimits(env, table),
    budgets: loadBudgets(env, table),
  }
}

/**
 * The value types of the rate-limit settings read as one value (src/config/values.ts): the
 * environment's reader parses their text with them, and src/ratelimit/options.ts checks the same
 * options given in code with them.
 */
export const RATE_LIMIT_VALUES = {
  AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: oneOf(['open', 'closed']),
  AUTHGATE_RATE_LIMIT_IPV6_PREFIX: integer(1, 128),
  AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS: integer(1000, 100_000_000),
  AUTHGATE_REDIS_URL: text,
  AUTHGATE_REDIS_SENTINEL_PASSWORD: text,
  AUTHGATE_REDIS_TLS_CA: text,
  AUTHGATE_REDIS_KEY_PREFIX: text,
  AUTHGATE_REDIS_TIMEOUT: duration(),
} satisfies Record<string, SettingValue<unknown>>

type RateLimitValue<V extends keyof typeof RATE_LIMIT_VALUES> =
  (typeof RATE_LIMIT_VALUES)[V] extends SettingValue<infer T> ? T : never

/** One of them from the environment: its text or the schema's default, parsed. */
const read = <V extends keyof typeof RATE_LIMIT_VALUES>(env: Env, variable: V): RateLimitValue<V> =>
  readSetting(env, variable, RATE_LIMIT_VALUES[variable] as SettingValue<RateLimitValue<V>>)!

/**
 * The Redis connection the environment names (AUTHGATE_REDIS_URL and the settings that go with it),
 * or undefined without a URL: what the rate limiter and the cookie-session store both connect with.
 */
export function loadRedisConnection(env: Env): RedisSettings | undefined {
  const timeoutMs = read(env, 'AUTHGATE_REDIS_TIMEOUT')
  const url = envValue(env, 'AUTHGATE_REDIS_URL')
  if (url === undefined) return undefined
  let tls: boolean
  try {
    // The URL may hold a password: the messages never echo it.
    tls = parseRedisUrl(url).tls
  } catch (err) {
    throw new AuthgateConfigError('AUTHGATE_REDIS_URL', (err as Error).message)
  }
  const sentinelPassword = envValue(env, 'AUTHGATE_REDIS_SENTINEL_PASSWORD')
  const tlsCa = readTlsCa(envValue(env, 'AUTHGATE_REDIS_TLS_CA'), tls)
  return {
    url,
    ...(tlsCa !== undefined ? { tlsCa } : {}),
    ...(sentinelPassword !== undefined ? { sentinelPassword } : {}),
    keyPrefix: read(env, 'AUTHGATE_REDIS_KEY_PREFIX'),
    timeoutMs,
  }
}

/** The CA file's PEM text, read once at start-up so a wrong path stops the service then. */
function readTlsCa(path: string | undefined, tls: boolean): string | undefined {
  if (path === undefined) return undefined
  if (!tls)
    throw new AuthgateConfigError(
      'AUTHGATE_REDIS_TLS_CA',
      'is only used with a TLS URL (rediss://, rediss+sentinel://, rediss+cluster://)',
    )
  let pem: string
  try {
    pem = readFileSync(path, 'utf8')
  } catch (err) {
    throw new AuthgateConfigError('AUTHGATE_REDIS_TLS_CA', `cannot read ${path}: ${(err as Error).message}`)
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new AuthgateConfigError('AUTHGATE_REDIS_TLS_CA', `${path} holds no PEM certificate`)
  return pem
}
