/**
 * One contract, every store (a contract suite for interchangeable implementations).
 * Real time with short windows: 5/1s is a burst of 5 and one unit back every 200 ms.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { MemoryStore } from '../../src/ratelimit/memory-store.ts'
import type { RateLimitPolicy } from '../../src/ratelimit/policy.ts'
import { RedisStore } from '../../src/ratelimit/redis-store.ts'
import type { RateLimitStore } from '../../src/ratelimit/store.ts'
import { SHARED_REDIS_URL, sharedRedisSkipReason, uniquePrefix } from './support/redis.ts'

const FIVE_PER_SECOND: RateLimitPolicy = { name: 'default', limit: 5, windowMs: 1000, burst: 5 }
const INTERVAL = 200

interface Candidate {
  name: string
  skip: string | undefined
  create(): Promise<RateLimitStore>
}

const redisSkip = await sharedRedisSkipReason()
const prefix = uniquePrefix('contract')
const candidates: Candidate[] = [
  { name: 'memory store', skip: undefined, create: async () => new MemoryStore() },
  {
    name: 'redis store',
    skip: redisSkip,
    async create() {
      const store = new RedisStore({ url: SHARED_REDIS_URL, keyPrefix: prefix, timeoutMs: 100 })
      assert.equal(await store.ready(2000), true, 'redis store did not connect')
      return store
    },
  },
]

async function takeMany(store: RateLimitStore, key: string, n: number, policy = FIVE_PER_SECOND) {
  const out = []
  for (let i = 0; i < n; i++) out.push(await store.take(key, policy))
  return out
}

for (const candidate of candidates) {
  describe(`rate-limit store contract: ${candidate.name}`, { skip: candidate.skip }, () => {
    let store: RateLimitStore
    const stores: RateLimitStore[] = []
    const fresh = async () => {
      store = await candidate.create()
      stores.push(store)
      return store
    }
    after(async () => {
      for (const s of stores) {
        if (s instanceof RedisStore) {
          const keys = await s.client.keys(`${prefix}*`)
          if (keys.length) await s.client.del(...keys)
        }
        await s.close()
      }
    })

    it('lets a burst of the allowed size through, counting remaining down', async () => {
      const s = await fresh()
      const decisions = await takeMany(s, 'burst', 5)
      assert.deepEqual(
        decisions.map((d) => d.allowed),
        [true, true, true, true, true],
      )
      assert.deepEqual(
        decisions.map((d) => d.remaining),
        [4, 3, 2, 1, 0],
      )
      for (const d of decisions) assert.equal(d.retryAfterMs, 0)
    })

    it('denies the next request with a retry-after of at most one interval, then allows it after that time', async () => {
      const s = await fresh()
      await takeMany(s, 'retry', 5)
      const denied = await s.take('retry', FIVE_PER_SECOND)
      assert.equal(denied.allowed, false)
      assert.equal(denied.remaining, 0)
      assert.ok(denied.retryAfterMs > 0 && denied.retryAfterMs <= INTERVAL, `retryAfterMs ${denied.retryAfterMs}`)
      // A retry clearly before the time is refused; one at the time is let in.
      const t0 = performance.now()
      await sleep(Math.max(0, denied.retryAfterMs - 60))
      const early = await s.take('retry', FIVE_PER_SECOND)
      const decidedBy = performance.now() - t0
      if (decidedBy < denied.retryAfterMs - 5)
        assert.equal(early.allowed, false, `allowed ${decidedBy.toFixed(0)} ms into a ${denied.retryAfterMs} ms wait`)
      if (early.allowed) return // the machine was too slow to ask early; the unit is spent
      await sleep(Math.max(0, denied.retryAfterMs - (performance.now() - t0)) + 2)
      const again = await s.take('retry', FIVE_PER_SECOND)
      assert.equal(again.allowed, true)
      assert.equal(again.remaining, 0)
    })

    it('keeps different keys independent', async () => {
      const s = await fresh()
      await takeMany(s, 'client-a', 5)
      assert.equal((await s.take('client-a', FIVE_PER_SECOND)).allowed, false)
      const b = await s.take('client-b', FIVE_PER_SECOND)
      assert.equal(b.allowed, true)
      assert.equal(b.remaining, 4)
    })

    it('does not double the burst across a window edge', async () => {
      const s = await fresh()
      // Fixed-window limiters reset on multiples of the window on the epoch clock: spend the whole
      // burst just before such an edge and ask again just after it.
      const msToEdge = 1000 - (Date.now() % 1000)
      await sleep(msToEdge < 120 ? msToEdge + 1000 - 60 : msToEdge - 60)
      const before = await takeMany(s, 'edge', 5)
      assert.ok(before.every((d) => d.allowed))
      const start = performance.now()
      const intoSecond = Date.now() % 1000
      await sleep(intoSecond > 500 ? 1000 - intoSecond + 40 : 40) // just past the edge
      const after = await takeMany(s, 'edge', 5)
      const elapsed = performance.now() - start
      assert.ok(elapsed < 600, `test too slow to probe the edge (${elapsed.toFixed(0)} ms)`)
      const allowedAfter = after.filter((d) => d.allowed).length
      assert.ok(
        allowedAfter <= Math.floor(elapsed / INTERVAL),
        `${allowedAfter} allowed ${elapsed.toFixed(0)} ms after a full burst`,
      )
    })

    it('holds the sustained rate: over 1.2 s of hammering, burst + elapsed/interval requests get through', async () => {
      const s = await fresh()
      const start = performance.now()
      let allowed = 0
      while (performance.now() - start < 1200) {
        if ((await s.take('hammer', FIVE_PER_SECOND)).allowed) allowed++
        await sleep(10)
      }
      const elapsed = performance.now() - start
      assert.ok(allowed <= 5 + Math.floor(elapsed / INTERVAL), `${allowed} allowed in ${elapsed.toFixed(0)} ms`)
      assert.ok(allowed >= 5 + Math.floor(1200 / INTERVAL) - 1, `only ${allowed} allowed in ${elapsed.toFixed(0)} ms`)
    })

    it('is atomic: 200 concurrent takes allow exactly the burst', async () => {
      const s = await fresh()
      const policy: RateLimitPolicy = { name: 'default', limit: 20, windowMs: 3_600_000, burst: 20 }
      const decisions = await Promise.all(Array.from({ length: 200 }, () => s.take('concurrent', policy)))
      assert.equal(decisions.filter((d) => d.allowed).length, 20)
      const remaining = decisions
        .filter((d) => d.allowed)
        .map((d) => d.remaining)
        .sort((a, b) => a - b)
      assert.deepEqual(
        remaining,
        Array.from({ length: 20 }, (_, i) => i),
        'each unit granted exactly once',
      )
    })

    it('honours an explicit burst smaller than the rate', async () => {
      const s = await fresh()
      const policy: RateLimitPolicy = { name: 'default', limit: 100, windowMs: 60_000, burst: 3 }
      const decisions = await takeMany(s, 'small-burst', 4, policy)
      assert.deepEqual(
        decisions.map((d) => d.allowed),
        [true, true, true, false],
      )
      assert.ok(
        decisions[3]!.retryAfterMs <= 600 && decisions[3]!.retryAfterMs > 500,
        `retry ${decisions[3]!.retryAfterMs}`,
      )
    })

    it('reports the time until the bucket is full again', async () => {
      const s = await fresh()
      const [first] = await takeMany(s, 'reset', 1)
      assert.ok(Math.abs(first!.resetMs - INTERVAL) < 20, `resetMs ${first!.resetMs}`)
      const rest = await takeMany(s, 'reset', 4)
      assert.ok(Math.abs(rest[3]!.resetMs - 5 * INTERVAL) < 40, `resetMs ${rest[3]!.resetMs}`)
    })
  })
}
