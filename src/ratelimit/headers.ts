import { emissionIntervalMs, type RateLimitPolicy } from './policy.ts'
import type { Decision } from './store.ts'

/*
 * Header syntax of draft-ietf-httpapi-ratelimit-headers-11 (Structured Field lists):
 *   RateLimit-Policy: "default";q=30;w=300        quota q per window w seconds (§3)
 *   RateLimit: "default";r=0;t=10                 r units available now; within t seconds no more than r (§4)
 * Retry-After must not point earlier than the end of t (§6), so on a 429 both are the same number.
 */

/** RateLimit-Policy value; the burst, when it differs from q, as a vendor parameter (§3.1). */
export function policyHeader(policy: RateLimitPolicy): string {
  const burst = policy.burst === policy.limit ? '' : `;authgate-burst=${policy.burst}`
  return `"${policy.name}";q=${policy.limit};w=${policy.windowMs / 1000}${burst}`
}

/**
 * Seconds until the client gets one more unit than `remaining`: the draft's effective window `t`.
 * Under GCRA a unit comes back every emission interval, so it is the time to the next one, not
 * the (longer) time until the bucket is full.
 */
export function effectiveWindowSeconds(policy: RateLimitPolicy, decision: Decision): number {
  if (!decision.allowed) return retryAfterSeconds(decision)
  const interval = emissionIntervalMs(policy)
  let next = decision.resetMs % interval
  if (next < 0.001) next = interval // reset is a whole number of intervals (up to microsecond rounding)
  return Math.max(1, Math.ceil(next / 1000 - 1e-9))
}

/** Retry-After in whole seconds, rounded up so a client that waits exactly that long is let in. */
export function retryAfterSeconds(decision: Decision): number {
  return Math.max(1, Math.ceil(decision.retryAfterMs / 1000 - 1e-9))
}

export function rateLimitHeader(policy: RateLimitPolicy, decision: Decision): string {
  return `"${policy.name}";r=${decision.remaining};t=${effectiveWindowSeconds(policy, decision)}`
}
