import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { gcra, TOLERANCE_MS } from '../../src/ratelimit/gcra.ts'

const interval = fc.double({ min: 0.5, max: 1e9, noNaN: true })
const burst = fc.integer({ min: 1, max: 50 })
const clock = fc.double({ min: 0, max: 1e13, noNaN: true })

/** Runs arrivals (ms, ascending) through GCRA; returns the times that were allowed. */
function run(arrivals: number[], intervalMs: number, b: number): number[] {
  let tat: number | undefined
  const allowed: number[] = []
  for (const now of arrivals) {
    const step = gcra(tat, now, intervalMs, b)
    tat = step.tat
    if (step.decision.allowed) allowed.push(now)
  }
  return allowed
}

describe('gcra', () => {
  it('allows the first request of any policy at any clock reading (regression: (now + T) - T != now in floats)', () => {
    fc.assert(
      fc.property(clock, interval, burst, (now, t, b) => {
        const { decision } = gcra(undefined, now, t, b)
        assert.equal(decision.allowed, true)
        assert.equal(decision.remaining, b - 1)
      }),
    )
  })

  // A request may come up to TOLERANCE_MS before its theoretical arrival time (floating-point
  // slack), once per span: the TAT moves on from itself, not from the early arrival.
  it('never lets more than burst + (span + tolerance)/interval requests into any span of time', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 10_000, noNaN: true }), { minLength: 1, maxLength: 200 }),
        fc.double({ min: 1, max: 1000, noNaN: true }),
        burst,
        (raw, t, b) => {
          const arrivals = [...raw].sort((x, y) => x - y)
          const allowed = run(arrivals, t, b)
          for (let i = 0; i < allowed.length; i++) {
            for (let j = i; j < allowed.length; j++) {
              const span = allowed[j]! - allowed[i]!
              assert.ok(
                j - i + 1 <= b + (span + TOLERANCE_MS) / t + 1e-9,
                `${j - i + 1} allowed within ${span} ms (interval ${t}, burst ${b})`,
              )
            }
          }
        },
      ),
    )
  })

  it('the tolerance is one microsecond, not more (the counterexample CI found to the old bound)', () => {
    // burst 1, interval 1 ms: the second request 0.5 µs early is allowed, one 2 µs early is not
    const first = gcra(undefined, 0, 1, 1)
    assert.equal(gcra(first.tat, 0.9995, 1, 1).decision.allowed, true)
    assert.equal(gcra(first.tat, 0.998, 1, 1).decision.allowed, false)
  })

  it('never refuses a client that keeps to the sustained rate', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 5, noNaN: true }), { maxLength: 100 }),
        fc.double({ min: 1, max: 1000, noNaN: true }),
        burst,
        (extra, t, b) => {
          let now = 1_000_000
          const arrivals = extra.map((e) => (now += t * (1 + e)))
          assert.equal(run(arrivals, t, b).length, arrivals.length)
        },
      ),
    )
  })

  it('does not change state on a denial, and says exactly when the next request is allowed', () => {
    const t = 100
    let tat: number | undefined
    for (let i = 0; i < 3; i++) tat = gcra(tat, 0, t, 3).tat
    const denied = gcra(tat, 10, t, 3)
    assert.equal(denied.decision.allowed, false)
    assert.equal(denied.tat, tat)
    assert.equal(denied.decision.retryAfterMs, 90)
    assert.equal(gcra(tat, 10 + 89.9, t, 3).decision.allowed, false)
    assert.equal(gcra(tat, 10 + 90, t, 3).decision.allowed, true)
  })
})
