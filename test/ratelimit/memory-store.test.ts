import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { MemoryStore } from '../../src/ratelimit/memory-store.ts'
import type { RateLimitPolicy } from '../../src/ratelimit/policy.ts'

const DEFAULT: RateLimitPolicy = { name: 'default', limit: 30, windowMs: 300_000, burst: 30 }

// A full collection before each heap reading, without requiring --expose-gc on the command line.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
function heapUsed(): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** A distinct IPv4 client for every i, in the key format the limiter uses. */
const clientKeyOf = (i: number) => `/token|10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`

describe('memory store', () => {
  it('holds 100,000 distinct clients in bounded memory and frees them once idle', async () => {
    let now = 1_000
    const store = new MemoryStore({ now: () => now, sweepIntervalMs: 3_600_000 })
    const before = heapUsed()
    for (let i = 0; i < 100_000; i++) store.takeSync(clientKeyOf(i), DEFAULT)
    const during = heapUsed()
    const perClient = (during - before) / 100_000
    console.log(
      `memory store: 100,000 clients -> +${((during - before) / 1024 / 1024).toFixed(1)} MiB heap (${perClient.toFixed(0)} B per client)`,
    )
    assert.equal(store.size, 100_000)
    assert.ok(during - before < 25 * 1024 * 1024, `100k clients took ${during - before} bytes`)

    // Each bucket is full again one interval (10 s) after its only request: idle from then on.
    now += 9_999
    assert.equal(store.sweep(), 0, 'no bucket is idle before it has refilled')
    now += 2
    assert.equal(store.sweep(), 100_000)
    assert.equal(store.size, 0)
    const afterSweep = heapUsed()
    assert.ok(
      afterSweep - before < 2 * 1024 * 1024,
      `heap still ${afterSweep - before} bytes above the start after the sweep`,
    )
    await store.close()
  })

  it('keeps a bucket that is still refilling and behaves like a fresh one after expiry', async () => {
    let now = 0
    const store = new MemoryStore({ now: () => now, sweepIntervalMs: 3_600_000 })
    const policy: RateLimitPolicy = { name: 'default', limit: 2, windowMs: 1000, burst: 2 }
    store.takeSync('k', policy)
    store.takeSync('k', policy)
    now = 500
    assert.equal(store.sweep(), 0)
    assert.equal(store.takeSync('k', policy).allowed, true, 'one unit back after 500 ms')
    now = 1500
    assert.equal(store.sweep(), 1)
    assert.deepEqual(store.takeSync('k', policy), { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 500 })
    await store.close()
  })

  it('sweeps on its own timer', async () => {
    let now = 0
    const store = new MemoryStore({ now: () => now, sweepIntervalMs: 20 })
    store.takeSync('k', DEFAULT)
    now = 1e9
    await new Promise((resolve) => setTimeout(resolve, 60))
    assert.equal(store.size, 0)
    await store.close()
  })

  it('caps the number of buckets, dropping the least recently used', async () => {
    const store = new MemoryStore({ maxKeys: 1000, sweepIntervalMs: 3_600_000 })
    store.takeSync('busy', DEFAULT)
    for (let i = 0; i < 5000; i++) {
      store.takeSync(clientKeyOf(i), DEFAULT)
      if (i % 500 === 0) store.takeSync('busy', DEFAULT)
    }
    assert.equal(store.size, 1000)
    const busy = store.takeSync('busy', DEFAULT)
    assert.equal(busy.remaining, 30 - 12, 'the recently used bucket kept its state')
    assert.equal(store.takeSync(clientKeyOf(0), DEFAULT).remaining, 29, 'the oldest bucket was dropped')
    await store.close()
  })

  it('does not let a refused client that keeps knocking lose its bucket to the cap', async () => {
    const store = new MemoryStore({ maxKeys: 1000, sweepIntervalMs: 3_600_000 })
    const strict: RateLimitPolicy = { name: 'default', limit: 1, windowMs: 3_600_000, burst: 1 }
    store.takeSync('knocker', strict)
    for (let i = 0; i < 5000; i++) {
      store.takeSync(clientKeyOf(i), DEFAULT)
      if (i % 100 === 0)
        assert.equal(store.takeSync('knocker', strict).allowed, false, `knocker let in after ${i} other clients`)
    }
    await store.close()
  })

  it('gives a unit back on refund, never more than was taken', () => {
    let now = 1_000
    const store = new MemoryStore({ now: () => now, sweepIntervalMs: 3_600_000 })
    const three: RateLimitPolicy = { name: 'a', limit: 3, windowMs: 900_000, burst: 3 }
    for (let i = 0; i < 3; i++) store.takeSync('k', three)
    assert.equal(store.takeSync('k', three).allowed, false)
    store.refundSync('k', three)
    assert.deepEqual(store.takeSync('k', three), { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 900_000 })
    // Refunds past a full bucket drop its state, and give nothing beyond the burst.
    for (let i = 0; i < 5; i++) store.refundSync('k', three)
    assert.equal(store.size, 0)
    store.refundSync('never', three)
    assert.equal(store.takeSync('k', three).remaining, 2)
    now += 1
    void store.refund('k', three)
    assert.equal(store.takeSync('k', three).remaining, 2)
    void store.close()
  })
})
