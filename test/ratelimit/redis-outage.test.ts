/**
 * Redis failing under a running limiter, on a redis-server of our own (never the shared 6379):
 * killed, frozen (SIGSTOP: connection up, no answers), absent at start-up, script cache flushed.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadRateLimitConfig } from '../../src/ratelimit/config.ts'
import { createRateLimiter } from '../../src/ratelimit/limiter.ts'
import { RedisStore } from '../../src/ratelimit/redis-store.ts'
import { GCRA_SCRIPT_SHA } from '../../src/ratelimit/redis-script.ts'
import { ROUTES, tinyApp } from './support/app.ts'
import { recordingLogger } from './support/logger.ts'
import { redisServerSkipReason, ThrowawayRedis, uniquePrefix } from './support/redis.ts'

const TIMEOUT_MS = 100
/** Scheduling slack on a shared 2-core machine; still far below any hang. */
const SLACK_MS = 250

describe('redis outage', { skip: redisServerSkipReason() }, () => {
  let redis: ThrowawayRedis
  before(async () => {
    redis = await ThrowawayRedis.start()
  })
  after(async () => {
    await redis?.remove()
  })

  async function setup(t: TestContext, onError: 'open' | 'closed', waitForReady = true) {
    const config = loadRateLimitConfig(
      {
        AUTHGATE_RATE_LIMIT: '2/1h',
        AUTHGATE_REDIS_URL: redis.url,
        AUTHGATE_REDIS_KEY_PREFIX: uniquePrefix('outage'),
        AUTHGATE_REDIS_TIMEOUT: `${TIMEOUT_MS}ms`,
        AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: onError,
      },
      ROUTES,
    )
    const logger = recordingLogger()
    const limiter = createRateLimiter(config, logger)
    const { app, handled } = tinyApp(limiter)
    t.after(() => limiter.close())
    if (waitForReady) assert.equal(await limiter.ready(2000), true)
    let client = 0
    /** One request to a limited route; fails the test if it took longer than the Redis timeout allows. */
    const send = async (ip = '203.0.113.1') => {
      const start = performance.now()
      const res = await app.inject({ method: 'POST', url: '/signup', remoteAddress: ip })
      const ms = performance.now() - start
      assert.ok(ms < TIMEOUT_MS + SLACK_MS, `a request waited ${ms.toFixed(0)} ms on Redis`)
      return res
    }
    const freshClient = () => `198.51.100.${++client}`
    /**
     * Polls until Redis decides again (the RateLimit header is back), then proves limiting works on
     * a client of its own: a probe that timed out while Redis came back may still have been counted
     * there, so the probing client's count is not the one checked.
     */
    const expectLimitingResumes = async () => {
      const probe = freshClient()
      const deadline = performance.now() + 5000
      while ((await send(probe)).headers.ratelimit === undefined) {
        assert.ok(performance.now() < deadline, 'limiting did not resume within 5 s of Redis coming back')
        await sleep(50)
      }
      const ip = freshClient()
      assert.equal((await send(ip)).statusCode, 200)
      assert.equal((await send(ip)).statusCode, 200)
      assert.equal((await send(ip)).statusCode, 429)
    }
    return { limiter, logger, handled, send, freshClient, expectLimitingResumes }
  }

  async function ensureRunning() {
    await redis.stop()
    await redis.restart()
  }

  it('fail-open: Redis killed → requests pass at once, one throttled warning, a counter; Redis back → limiting resumes', async (t) => {
    await ensureRunning()
    const { limiter, logger, handled, send, expectLimitingResumes } = await setup(t, 'open')
    assert.deepEqual([(await send()).statusCode, (await send()).statusCode, (await send()).statusCode], [200, 200, 429])

    await redis.stop()
    // A refusal Redis gave before the outage still holds: the replica knows Redis would refuse this
    // client until the time it said, so nothing is left to the failure policy.
    const known = await send()
    assert.equal(known.statusCode, 429, 'a known refusal holds through the outage')
    assert.equal(limiter.counters.storeErrors, 0)
    const other = '203.0.113.2'
    for (let i = 0; i < 20; i++) {
      const res = await send(other)
      assert.equal(res.statusCode, 200, 'fail-open lets the request through')
      assert.equal(res.headers['ratelimit-policy'], '"default";q=2;w=3600')
      assert.equal(res.headers.ratelimit, undefined, 'no remaining count is claimed without Redis')
    }
    assert.equal(limiter.counters.failedOpen, 20)
    assert.equal(limiter.counters.storeErrors, 20)
    assert.equal(handled.get('POST /signup'), 22)
    const warnings = logger.lines.filter((l) => l.level === 'warn')
    assert.equal(warnings.length, 1, 'the warning is rate-limited, not one line per request')

    await redis.restart()
    await expectLimitingResumes()
    assert.ok(logger.lines.some((l) => l.level === 'info' && String(l.args[0]).includes('reachable again')))
  })

  it('fail-closed: Redis killed → 429 with Retry-After at once, backend not called; Redis back → normal limiting', async (t) => {
    await ensureRunning()
    const { limiter, handled, send, expectLimitingResumes } = await setup(t, 'closed')
    await redis.stop()
    const res = await send()
    assert.equal(res.statusCode, 429)
    assert.equal(res.headers['retry-after'], '1')
    assert.deepEqual(res.json(), {
      code: 429,
      error_code: 'over_request_rate_limit',
      msg: 'Rate limiting is temporarily unavailable; try again shortly',
    })
    assert.equal(handled.get('POST /signup'), undefined)
    assert.equal(limiter.counters.failedClosed, 1)

    await redis.restart()
    await expectLimitingResumes()
  })

  it('a frozen Redis (connection open, no answers) costs each request at most the timeout', async (t) => {
    await ensureRunning()
    const { limiter, send, expectLimitingResumes } = await setup(t, 'open')
    redis.freeze()
    try {
      // Concurrent requests too: none may queue behind another.
      const start = performance.now()
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => send(`192.0.2.${i}`)))
      assert.ok(performance.now() - start < TIMEOUT_MS + SLACK_MS)
      assert.ok(results.every((r) => r.statusCode === 200))
      // Long enough for the socket timeout to drop the dead connection and reconnect attempts to begin.
      const until = performance.now() + 2500
      while (performance.now() < until) {
        assert.equal((await send()).statusCode, 200)
        await sleep(100)
      }
      assert.ok(limiter.counters.failedOpen >= 20)
    } finally {
      redis.thaw()
    }
    await expectLimitingResumes()
  })

  it('starts while Redis is down (failure policy applies) and limits once it appears', async (t) => {
    await redis.stop()
    const { limiter, send, expectLimitingResumes } = await setup(t, 'open', false)
    assert.equal(await limiter.ready(300), false)
    assert.equal((await send()).statusCode, 200)
    await redis.restart()
    await expectLimitingResumes()
  })

  it('loads the script again as soon as a restarted Redis is reachable, before any decision', async () => {
    await ensureRunning()
    const store = new RedisStore({ url: redis.url, keyPrefix: uniquePrefix('reload'), timeoutMs: TIMEOUT_MS })
    try {
      assert.ok(await store.ready(2000))
      await redis.stop()
      const back = new Promise((resolve) => store.client.once('ready', resolve))
      await redis.restart()
      await back
      // Asked on the same connection, so answered after whatever was sent on 'ready'.
      assert.deepEqual(await store.client.script('EXISTS', GCRA_SCRIPT_SHA), [1])
    } finally {
      await store.close()
    }
  })

  it('reloads the script when the server has lost it (NOSCRIPT → EVAL)', async () => {
    await ensureRunning()
    const store = new RedisStore({ url: redis.url, keyPrefix: uniquePrefix('noscript'), timeoutMs: TIMEOUT_MS })
    try {
      assert.ok(await store.ready(2000))
      const policy = { name: 'default', limit: 2, windowMs: 60_000, burst: 2 }
      assert.equal((await store.take('k', policy)).remaining, 1)
      await store.client.script('FLUSH')
      assert.equal((await store.take('k', policy)).remaining, 0)
      assert.equal((await store.take('k', policy)).allowed, false)
    } finally {
      await store.close()
    }
  })
})
