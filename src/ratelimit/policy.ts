import { AuthgateConfigError } from '../config.ts'

/**
 * A sustained rate (`limit` requests per `windowMs`) plus a burst: the most requests a client can
 * make back to back. GCRA turns this into one emission interval (windowMs / limit) and a tolerance
 * of `burst` intervals, so no window edge ever lets a client through twice.
 */
export interface RateLimitPolicy {
  /** Policy identifier shown in the RateLimit / RateLimit-Policy headers. */
  name: string
  limit: number
  windowMs: number
  burst: number
}

/** Milliseconds between two requests at the sustained rate (the GCRA emission interval). */
export function emissionIntervalMs(policy: RateLimitPolicy): number {
  return policy.windowMs / policy.limit
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const RATE = /^(\d+)\s*\/\s*(\d+)?\s*(s|m|h|d)$/
const BURST = /^burst\s*=\s*(\d+)$/
const MAX = 1_000_000_000

/**
 * `30/5m`, `5/1s`, `100/h`, `1000/1d`, optionally `;burst=10` (default: burst = limit).
 * Windows are whole seconds because RateLimit-Policy's `w` parameter is an integer of seconds.
 */
export function parseRate(variable: string, raw: string, name: string): RateLimitPolicy {
  const [rate = '', ...params] = raw.split(';').map((s) => s.trim())
  const m = RATE.exec(rate)
  if (!m)
    throw new AuthgateConfigError(
      variable,
      `expected a rate like 30/5m, 5/1s or 100/1h[;burst=10], got ${JSON.stringify(raw)}`,
    )
  const limit = Number(m[1])
  const windowMs = Number(m[2] ?? '1') * UNIT_MS[m[3]!]!
  if (limit < 1 || limit > MAX)
    throw new AuthgateConfigError(
      variable,
      `the request count must be between 1 and ${MAX}, got ${JSON.stringify(raw)}`,
    )
  if (windowMs < 1000 || windowMs > 366 * UNIT_MS.d!)
    throw new AuthgateConfigError(variable, `the window must be between 1s and 366d, got ${JSON.stringify(raw)}`)
  let burst = limit
  const seen = new Set<string>()
  for (const p of params) {
    const b = BURST.exec(p)
    if (!b || seen.has('burst'))
      throw new AuthgateConfigError(
        variable,
        `unknown or repeated rate parameter ${JSON.stringify(p)} in ${JSON.stringify(raw)} (only ;burst=N)`,
      )
    seen.add('burst')
    burst = Number(b[1])
    if (burst < 1 || burst > MAX)
      throw new AuthgateConfigError(variable, `burst must be between 1 and ${MAX}, got ${JSON.stringify(raw)}`)
  }
  return { name, limit, windowMs, burst }
}

/** Same rate and burst (names may differ). */
export function samePolicy(a: RateLimitPolicy, b: RateLimitPolicy): boolean {
  return a.limit === b.limit && a.windowMs === b.windowMs && a.burst === b.burst
}
