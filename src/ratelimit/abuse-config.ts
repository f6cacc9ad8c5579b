import { parseRouteKey } from '../core/route-key.ts'
import { AuthgateConfigError, envValue, isOff, parseBoolean, type Env } from '../config/env.ts'
import { settingValue } from '../config/schema.ts'
import { randomAccountSecret } from './account-key.ts'
import { parseRate, type RateLimitPolicy } from './policy.ts'

/**
 * What the limiter needs to know of a mounted route, as the route table says it
 * (src/auth/routes/: `rateLimited`, `account`, `sendsMessages`): no other list of routes exists.
 */
export interface LimitableRoute {
  /** `METHOD /template`, relative to the prefix. */
  key: string
  /** Limited per client IP unless AUTHGATE_RATE_LIMITED_ROUTES says otherwise. */
  rateLimited: boolean
  /** The body names an account, limited at the sign-in or the message rate. */
  account?: 'sign-in' | 'message' | undefined
  /** Makes Supabase Auth send an e-mail or an SMS: draws on the budgets. */
  sendsMessages?: boolean | undefined
}

export interface AccountLimitConfig {
  /** `METHOD /template` → the per-account rate; routes absent are not limited per account. */
  routes: Map<string, RateLimitPolicy>
  /** HMAC secret of the account keys. */
  secret: string
  /** False when the secret is this process's own random one (limits then differ per replica). */
  secretConfigured: boolean
  /** Known devices (a device cookie) have a password sign-in budget of their own. */
  deviceCookie: boolean
}

export interface Budget {
  /** What Supabase Auth allows per hour (its GOTRUE_RATE_LIMIT_*_SENT). */
  backendPerHour: number
  /** The cluster-wide policy that never lets more than that through in any hour. */
  policy: RateLimitPolicy
  /** What one client IP may spend of it. */
  clientPolicy: RateLimitPolicy
}

export interface BudgetConfig {
  /** The routes that draw on the budgets (`METHOD /template`). */
  routes: ReadonlySet<string>
  email: Budget | undefined
  sms: Budget | undefined
  /** 0 < share <= 1. */
  clientShare: number
}

/**
 * The per-account limits (docs/rate-limiting.md): a default rate for sign-in routes and one for
 * message routes, each overridable per route or turned off.
 */
export function loadAccountLimits(env: Env, table: readonly LimitableRoute[]): AccountLimitConfig {
  const rate = (variable: string, name: string) => {
    const raw = settingValue(env, variable)!
    return isOff(raw) ? undefined : parseRate(variable, raw, name)
  }
  const accountRoutes = new Map(table.flatMap((r) => (r.account ? [[r.key, r.account] as const] : [])))
  const signIn = rate('AUTHGATE_ACCOUNT_RATE_LIMIT', 'account')
  const message = rate('AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT', 'account-message')
  const routes = new Map<string, RateLimitPolicy>()
  for (const [route, kind] of accountRoutes) {
    const policy = kind === 'sign-in' ? signIn : message
    if (policy !== undefined) routes.set(route, policy)
  }
  const variable = 'AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES'
  const seen = new Set<string>()
  for (const item of (settingValue(env, variable) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = item.indexOf('=')
    const route = eq < 0 ? undefined : parseRouteKey(item.slice(0, eq))?.key
    if (route === undefined)
      throw new AuthgateConfigError(variable, `expected "METHOD /template=RATE" or "=off", got ${JSON.stringify(item)}`)
    if (!accountRoutes.has(route))
      throw new AuthgateConfigError(
        variable,
        `${route} names no account (routes: ${[...accountRoutes.keys()].join(', ')})`,
      )
    if (seen.has(route)) throw new AuthgateConfigError(variable, `${route} is given twice`)
    seen.add(route)
    const given = item.slice(eq + 1).trim()
    if (isOff(given)) routes.delete(route)
    else routes.set(route, parseRate(variable, given, 'account-' + route.split('/')[1]))
  }
  const given = envValue(env, 'AUTHGATE_ACCOUNT_KEY_SECRET')?.trim()
  if (given !== undefined && given !== '' && given.length < 32)
    throw new AuthgateConfigError('AUTHGATE_ACCOUNT_KEY_SECRET', 'must be at least 32 characters')
  const secretConfigured = given !== undefined && given !== ''
  const deviceCookie = parseBoolean(
    'AUTHGATE_ACCOUNT_DEVICE_COOKIE',
    settingValue(env, 'AUTHGATE_ACCOUNT_DEVICE_COOKIE')!,
    '"on" or "off"',
  )
  return {
    routes,
    secret: secretConfigured ? given : randomAccountSecret(),
    secretConfigured,
    deviceCookie,
  }
}

/** The budgets mirroring Supabase Auth's e-mail and SMS budgets, and the share one client may take. */
export function loadBudgets(env: Env, table: readonly LimitableRoute[]): BudgetConfig {
  const shareRaw = settingValue(env, 'AUTHGATE_BUDGET_CLIENT_SHARE')!
  const m = /^(\d+(?:\.\d+)?)\s*%$/.exec(shareRaw)
  const share = m ? Number(m[1]) / 100 : NaN
  if (!(share > 0 && share <= 1))
    throw new AuthgateConfigError(
      'AUTHGATE_BUDGET_CLIENT_SHARE',
      `expected a percentage above 0% and at most 100%, got ${JSON.stringify(shareRaw)}`,
    )
  const read = (variable: string, kind: 'email' | 'sms') => {
    const raw = settingValue(env, variable)!
    if (isOff(raw)) return undefined
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1_000_000_000)
      throw new AuthgateConfigError(
        variable,
        `expected Supabase Auth's count per hour (a whole number from 1) or off, got ${JSON.stringify(raw)}`,
      )
    return budgetFor(Number(raw), share, kind)
  }
  return {
    routes: new Set(table.filter((r) => r.sendsMessages === true).map((r) => r.key)),
    email: read('AUTHGATE_EMAIL_BUDGET', 'email'),
    sms: read('AUTHGATE_SMS_BUDGET', 'sms'),
    clientShare: share,
  }
}

const HOUR = 3_600_000

/**
 * Supabase Auth counts its messages in fixed hours (a counter reset every hour from its start,
 * which authgate cannot see). A token bucket with burst b refilling r per hour lets up to b + r
 * through in any hour, so both are half the backend's count: whichever hour Supabase Auth counts
 * in, authgate has let no more than its count through (docs/decisions.md, D36).
 */
export function budgetFor(perHour: number, share: number, kind: 'email' | 'sms'): Budget {
  const half = Math.floor(perHour / 2)
  const policy: RateLimitPolicy =
    half >= 1
      ? { name: `${kind}-budget`, limit: half, windowMs: HOUR, burst: half }
      : { name: `${kind}-budget`, limit: 1, windowMs: 2 * HOUR, burst: 1 }
  const clientLimit = Math.max(1, Math.floor(policy.limit * share))
  const clientPolicy: RateLimitPolicy = {
    name: `${kind}-budget-client`,
    limit: clientLimit,
    windowMs: policy.windowMs,
    burst: Math.max(1, Math.floor(policy.burst * share)),
  }
  return { backendPerHour: perHour, policy, clientPolicy }
}
