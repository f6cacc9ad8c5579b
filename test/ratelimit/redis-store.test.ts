import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { RateLimitPolicy } from '../../src/ratelimit/policy.ts'
import { RedisStore } from '../../src/ratelimit/redis-store.ts'
import { SHARED_REDIS_URL, sharedRedisSkipReason, uniquePrefix } from './support/redis.ts'

const HOURLY: RateLimitPolicy = { name: 'default', limit: 6, windowMs: 3_600_000, burst: 6 }

describe('redis store', { skip: await sharedRedisSkipReason() }, () => {
  const prefix = uniquePrefix('redis-store')
  let a: RedisStore
  let b: RedisStore
  before(async () => {
    // Two clients with their own connections stand for two authgate replicas.
    a = new RedisStore({ url: SHARED_REDIS_URL, keyPrefix: prefix, timeoutMs: 100 })
    b = new RedisStore({ url: SHARED_REDIS_URL, keyPrefix: prefix, timeoutMs: 100 })
    assert.ok(await a.ready(2000))
    assert.ok(await b.ready(2000))
  })
  after(async () => {
    const keys = await a.client.keys(`${prefix}*`)
    if (keys.length) await a.client.del(...keys)
    await a.close()
    await b.close()
  })

  it('two replicas share one budget per key', async () => {
    const results = []
    for (let i = 0; i < 8; i++) results.push(await (i % 2 ? b : a).take('shared', HOURLY))
    assert.deepEqual(
      results.map((d) => d.allowed),
      [true, true, true, true, true, true, false, false],
    )
    assert.deepEqual(
      results.slice(0, 6).map((d) => d.remaining),
      [5, 4, 3, 2, 1, 0],
    )
  })

  it('two replicas racing still grant each unit once', async () => {
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? b : a).take('race', HOURLY)))
    assert.equal(decisions.filter((d) => d.allowed).length, 6)
  })

  it("ignores the replicas' own clocks (one runs an hour ahead)", async (t) => {
    await a.take('skew', HOURLY)
    const aheadMs = 3_600_000
    const realNow = performance.now.bind(performance)
    t.mock.method(performance, 'now', () => realNow() + aheadMs)
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() + aheadMs })
    // A decision timed by this replica's clock would see a full bucket an hour later.
    const skewed = await b.take('skew', HOURLY)
    t.mock.timers.reset()
    t.mock.restoreAll()
    assert.equal(skewed.allowed, true)
    assert.equal(skewed.remaining, 4, 'the second request of the budget, whichever replica serves it')
    assert.ok(skewed.resetMs > 1_100_000 && skewed.resetMs <= 1_200_000, `resetMs ${skewed.resetMs}`)
  })

  it('stores one key per bucket that expires when the bucket would be full again', async () => {
    const d = await a.take('ttl', HOURLY)
    const pttl = await a.client.pttl(`${prefix}ttl`)
    assert.ok(pttl > 0 && pttl <= Math.ceil(d.resetMs) && pttl > d.resetMs - 1000, `pttl ${pttl}, reset ${d.resetMs}`)
    const denied = { ...HOURLY, limit: 1, burst: 1 }
    await a.take('ttl-denied', denied)
    const before = await a.client.pttl(`${prefix}ttl-denied`)
    assert.equal((await a.take('ttl-denied', denied)).allowed, false)
    const afterDenial = await a.client.pttl(`${prefix}ttl-denied`)
    assert.ok(afterDenial <= before, 'a denied request must not extend the wait')
  })

  it('gives a unit back, never more than was taken, and drops a key that is full again', async () => {
    for (let i = 0; i < 6; i++) await a.take('refund', HOURLY)
    assert.equal((await b.take('refund', HOURLY)).allowed, false)
    await b.refund('refund', HOURLY)
    const again = await a.take('refund', HOURLY)
    assert.deepEqual([again.allowed, again.remaining], [true, 0])
    await a.take('refund-one', HOURLY)
    await a.refund('refund-one', HOURLY)
    await a.refund('refund-one', HOURLY)
    await a.refund('never-taken', HOURLY)
    assert.equal(await a.client.exists(`${prefix}refund-one`, `${prefix}never-taken`), 0)
    assert.equal((await a.take('refund-one', HOURLY)).remaining, 5)
  })
})
