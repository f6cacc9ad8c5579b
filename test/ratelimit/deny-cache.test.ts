import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import { DenyCache } from '../../src/ratelimit/deny-cache.ts'
import type { RateLimitPolicy } from '../../src/ratelimit/policy.ts'
import { RedisStore } from '../../src/ratelimit/redis-store.ts'
import type { Decision } from '../../src/ratelimit/store.ts'
import { SHARED_REDIS_URL, sharedRedisSkipReason, uniquePrefix } from './support/redis.ts'

const refused = (retryAfterMs: number, resetMs = retryAfterMs + 100): Decision => ({
  allowed: false,
  remaining: 0,
  retryAfterMs,
  resetMs,
})

describe('deny cache', () => {
  it('refuses a key until the time the store gave, counted from when it was asked', () => {
    let now = 1_000
    const cache = new DenyCache({ now: () => now })
    const askedAt = cache.now()
    now += 7 // the answer took 7 ms to come back
    cache.remember('k', refused(500), askedAt)
    assert.deepEqual(cache.get('k'), { allowed: false, remaining: 0, retryAfterMs: 493, resetMs: 593 })
    now = 1_499
    assert.equal(cache.get('k')?.retryAfterMs, 1)
    now = 1_500
    assert.equal(cache.get('k'), undefined, 'the store may allow from 1,500 on: no longer refused here')
    assert.equal(cache.size, 0, 'an expired refusal is dropped when read')
  })

  it('keeps no allowed decision, and forgets a key given units back', () => {
    const cache = new DenyCache({ now: () => 0 })
    cache.remember('a', { allowed: true, remaining: 3, retryAfterMs: 0, resetMs: 100 }, 0)
    assert.equal(cache.get('a'), undefined)
    cache.remember('b', refused(100), 0)
    cache.forget('b')
    assert.equal(cache.get('b'), undefined)
  })

  it('holds at most maxKeys refusals, forgetting the oldest', () => {
    const cache = new DenyCache({ maxKeys: 2, now: () => 0 })
    cache.remember('a', refused(100), 0)
    cache.remember('b', refused(100), 0)
    cache.remember('a', refused(100), 0) // refused again: now the newest
    cache.remember('c', refused(100), 0)
    assert.equal(cache.size, 2)
    assert.equal(cache.get('b'), undefined)
    assert.ok(cache.get('a'))
    assert.ok(cache.get('c'))
  })
})

// 5 per second, burst 5: the sixth request in a burst is refused for about 200 ms.
const FAST: RateLimitPolicy = { name: 'fast', limit: 5, windowMs: 1_000, burst: 5 }
const HOURLY: RateLimitPolicy = { name: 'hourly', limit: 5, windowMs: 3_600_000, burst: 5 }

describe('deny cache in front of Redis, two replicas', { skip: await sharedRedisSkipReason() }, () => {
  const prefix = uniquePrefix('deny-cache')
  let a: RedisStore
  let b: RedisStore
  let plain: RedisStore
  const calls = new Map<RedisStore, number>()
  const counted = (store: RedisStore): RedisStore => {
    calls.set(store, 0)
    const evalsha = store.client.evalsha.bind(store.client) as (...args: unknown[]) => Promise<unknown>
    ;(store.client as unknown as { evalsha: (...args: unknown[]) => Promise<unknown> }).evalsha = (...args) => {
      calls.set(store, calls.get(store)! + 1)
      return evalsha(...args)
    }
    return store
  }

  before(async () => {
    a = counted(new RedisStore({ url: SHARED_REDIS_URL, keyPrefix: prefix, timeoutMs: 500 }))
    b = counted(new RedisStore({ url: SHARED_REDIS_URL, keyPrefix: prefix, timeoutMs: 500 }))
    // A replica that remembers nothing: what Redis alone decides.
    plain = new RedisStore(
      { url: SHARED_REDIS_URL, keyPrefix: prefix, timeoutMs: 500 },
      { denyCache: new DenyCache({ maxKeys: 0 }) },
    )
    for (const store of [a, b, plain]) assert.ok(await store.ready(2000))
  })
  after(async () => {
    const keys = await a.client.keys(`${prefix}*`)
    if (keys.length) await a.client.del(...keys)
    for (const store of [a, b, plain]) await store.close()
  })

  it('answers a known refusal without a round trip, and each replica learns its own', async () => {
    const results: boolean[] = []
    for (let i = 0; i < 12; i++) results.push((await (i % 2 ? b : a).take('hammered', FAST)).allowed)
    assert.deepEqual(results.slice(0, 5), [true, true, true, true, true])
    assert.ok(
      results.slice(5).every((allowed) => !allowed),
      `after the burst every request is refused: ${results}`,
    )
    // Each replica asked Redis until it was refused once, then answered its refusals itself.
    assert.ok(calls.get(a)! <= 4 && calls.get(b)! <= 4, `round trips: a ${calls.get(a)}, b ${calls.get(b)}`)
    assert.ok(a.cachedDenial('hammered') !== undefined)
  })

  it('never refuses what Redis would allow: once the cached refusal ends, Redis allows again', async () => {
    const key = 'boundary'
    for (let i = 0; i < 5; i++) assert.ok((await a.take(key, FAST)).allowed)
    const refusal = await a.take(key, FAST)
    assert.equal(refusal.allowed, false)
    // While the replica refuses locally, Redis refuses too (asked by a replica that caches nothing:
    // a refusal changes no bucket, so asking is harmless).
    assert.ok(a.cachedDenial(key))
    assert.equal((await plain.take(key, FAST)).allowed, false)
    // Wait until the local refusal has ended, then the very next request is Redis's to decide,
    // and it allows.
    while (a.cachedDenial(key) !== undefined) await sleep(5)
    await sleep(20) // the local deadline is at most a round trip earlier than Redis's
    assert.equal((await a.take(key, FAST)).allowed, true)
  })

  it('allows across two replicas exactly what Redis alone allows over a burst', async () => {
    let cachedAllowed = 0
    let plainAllowed = 0
    const ops: Promise<void>[] = []
    for (let i = 0; i < 60; i++) {
      ops.push((i % 2 ? b : a).take('burst-cached', HOURLY).then((d) => void (cachedAllowed += d.allowed ? 1 : 0)))
      ops.push(plain.take('burst-plain', HOURLY).then((d) => void (plainAllowed += d.allowed ? 1 : 0)))
    }
    await Promise.all(ops)
    // Nothing refills within the test at 5 an hour: exactly the burst, with or without the cache.
    assert.equal(plainAllowed, 5)
    assert.equal(cachedAllowed, 5)
  })
})
