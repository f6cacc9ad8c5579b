import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  effectiveWindowSeconds,
  policyHeader,
  rateLimitHeader,
  retryAfterSeconds,
} from '../../src/ratelimit/headers.ts'
import type { RateLimitPolicy } from '../../src/ratelimit/policy.ts'

const DEFAULT: RateLimitPolicy = { name: 'default', limit: 30, windowMs: 300_000, burst: 30 }
const allowed = (remaining: number, resetMs: number) => ({ allowed: true, remaining, retryAfterMs: 0, resetMs })
const denied = (retryAfterMs: number, resetMs: number) => ({ allowed: false, remaining: 0, retryAfterMs, resetMs })

describe('draft-11 rate-limit headers', () => {
  it('RateLimit-Policy: quota and window in seconds; burst as a vendor parameter only when it differs', () => {
    assert.equal(policyHeader(DEFAULT), '"default";q=30;w=300')
    assert.equal(
      policyHeader({ name: 'token', limit: 100, windowMs: 300_000, burst: 20 }),
      '"token";q=100;w=300;authgate-burst=20',
    )
  })

  it('RateLimit: r is the remaining count, t the seconds until one more unit comes back', () => {
    // 30/5m restores a unit every 10 s.
    assert.equal(rateLimitHeader(DEFAULT, allowed(29, 10_000)), '"default";r=29;t=10')
    assert.equal(rateLimitHeader(DEFAULT, allowed(0, 300_000)), '"default";r=0;t=10')
    assert.equal(rateLimitHeader(DEFAULT, allowed(5, 243_500)), '"default";r=5;t=4')
    assert.equal(
      rateLimitHeader(DEFAULT, allowed(5, 240_000.0004)),
      '"default";r=5;t=10',
      'microsecond rounding is not a new interval',
    )
  })

  it('on a denial t equals Retry-After, rounded up', () => {
    assert.equal(rateLimitHeader(DEFAULT, denied(9_001, 299_001)), '"default";r=0;t=10')
    assert.equal(retryAfterSeconds(denied(9_001, 299_001)), 10)
    assert.equal(retryAfterSeconds(denied(10_000, 300_000)), 10)
    assert.equal(retryAfterSeconds(denied(1, 290_001)), 1)
    assert.equal(effectiveWindowSeconds(DEFAULT, denied(0.2, 1)), 1)
  })
})
