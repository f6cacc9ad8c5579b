/**
 * The rate limiter through a Redis failover, with real processes: a primary watched by three
 * sentinels, and a three-primary Cluster, each losing its primary (SIGKILL) under load through two
 * authgate instances, one failing closed and one failing open. Limits hold before and after, the
 * policy applies in between, no request waits past the Redis timeout, nothing else fails, and the
 * limiter finds the new primary by itself. The window and the counts are reported (RELIABILITY.md).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import type { RedisStore } from '../../src/ratelimit/redis-store.ts'
import { startFakeBackend } from '../support/fake-backend.ts'
import { RedisCluster, SentinelSet, sentinelSkipReason } from './support/redis-ha.ts'
import { uniquePrefix } from './support/redis.ts'

const TIMEOUT_MS = 250
/** Scheduling slack on a loaded 2-core machine; far below a hang. */
const SLACK_MS = 1000
const UNAVAILABLE = 'Rate limiting is temporarily unavailable; try again shortly'
const BODY = '{"email":"a@example.com","password":"secret123"}'

interface Sample {
  instance: 'closed' | 'open'
  /** Milliseconds since the kill (negative before it). */
  at: number
  status: number
  ms: number
  /** The store decided (a RateLimit header); false when the failure policy answered. */
  decided: boolean
  retryAfter: string | undefined
  message: string | undefined
}

async function gateways(url: string) {
  const backend = await startFakeBackend()
  const prefix = uniquePrefix('failover')
  const make = (policy: 'open' | 'closed') =>
    buildApp({
      rateLimit: loadRateLimitSettings({
        AUTHGATE_RATE_LIMIT: '3/1h',
        AUTHGATE_REDIS_URL: url,
        AUTHGATE_REDIS_TIMEOUT: `${TIMEOUT_MS}ms`,
        AUTHGATE_REDIS_KEY_PREFIX: prefix,
        AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: policy,
        // The per-IP limit is what is followed through the failover: the per-account limit and the
        // e-mail budget would also answer the repeated sign-up.
        AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /signup=off',
        AUTHGATE_EMAIL_BUDGET: 'off',
      }),
      config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
    })
  const closed = await make('closed')
  const open = await make('open')
  for (const app of [closed, open]) assert.equal(await app.authgate.rateLimiter!.ready(10_000), true)
  return {
    closed,
    open,
    close: async () => {
      await closed.close()
      await open.close()
      await backend.close()
    },
  }
}

let nextClient = 0
const freshClient = () => {
  nextClient++
  return `10.${(nextClient >> 16) & 255}.${(nextClient >> 8) & 255}.${nextClient & 255}`
}

async function send(app: FastifyInstance, ip: string) {
  const start = performance.now()
  const res = await app.inject({
    method: 'POST',
    url: '/auth/signup',
    headers: { 'content-type': 'application/json' },
    payload: BODY,
    remoteAddress: ip,
  })
  const ms = performance.now() - start
  let message: string | undefined
  try {
    message = (res.json() as { msg?: string }).msg
  } catch {
    message = undefined
  }
  return {
    status: res.statusCode,
    ms,
    decided: res.headers.ratelimit !== undefined,
    retryAfter: res.headers['retry-after'] as string | undefined,
    message,
  }
}

/** Both instances share one budget: 3 allowed, the 4th denied, whichever instance answers. */
async function assertLimitsHold(closed: FastifyInstance, open: FastifyInstance, what: string) {
  const ip = freshClient()
  const statuses = []
  for (const app of [closed, open, closed, open]) statuses.push((await send(app, ip)).status)
  assert.deepEqual(statuses, [200, 200, 200, 429], `limits ${what}`)
}

async function failover(
  t: TestContext,
  url: string,
  kill: () => Promise<void>,
  state: () => string,
): Promise<Sample[]> {
  const { closed, open, close } = await gateways(url)
  t.after(close)
  await assertLimitsHold(closed, open, 'before the failover')

  const samples: Sample[] = []
  let killedAt = performance.now() + 1000
  let killed = false
  let lastAffected = -Infinity
  const deadline = performance.now() + 60_000
  for (;;) {
    const now = performance.now()
    if (!killed && now >= killedAt) {
      killedAt = performance.now()
      await kill()
      killedAt = (killedAt + performance.now()) / 2
      killed = true
    }
    const round = await Promise.all(
      (['closed', 'open'] as const).map(async (instance) => {
        const at = performance.now() - killedAt
        const r = await send(instance === 'closed' ? closed : open, freshClient())
        return { instance, at, ...r }
      }),
    )
    samples.push(...round)
    for (const s of round) if (!s.decided) lastAffected = Math.max(lastAffected, s.at)
    // Done once the limiter has decided everything for 3 s after the failover.
    const sinceKill = performance.now() - killedAt
    if (killed && sinceKill > 3000 && sinceKill - Math.max(lastAffected, 0) > 3000) break
    if (performance.now() > deadline) {
      const store = closed.authgate.rateLimiter!.store as RedisStore
      assert.fail(`the limiter did not recover within 60 s (client ${store.client.status}; ${state()})`)
    }
    await sleep(20)
  }

  await assertLimitsHold(closed, open, 'after the failover, without a restart')
  return samples
}

function judge(t: TestContext, samples: Sample[], label: string) {
  const unexpected = samples.filter((s) => s.status !== 200 && !(s.status === 429 && s.instance === 'closed'))
  assert.deepEqual(unexpected, [], 'only the policy answers: 200, or 429 from the fail-closed instance')
  const slowest = Math.max(...samples.map((s) => s.ms))
  assert.ok(
    slowest < TIMEOUT_MS + SLACK_MS,
    `a request waited ${slowest.toFixed(0)} ms (Redis timeout ${TIMEOUT_MS} ms)`,
  )
  const affected = samples.filter((s) => !s.decided)
  const closedAffected = affected.filter((s) => s.instance === 'closed')
  const openAffected = affected.filter((s) => s.instance === 'open')
  for (const s of closedAffected) {
    assert.equal(s.status, 429)
    assert.equal(s.retryAfter, '1')
    assert.equal(s.message, UNAVAILABLE)
  }
  for (const s of openAffected) assert.equal(s.status, 200, 'fail-open lets the request through')
  for (const s of samples.filter((x) => x.decided)) assert.equal(s.status, 200, 'a fresh client is allowed')
  assert.ok(affected.length > 0, 'the failover was seen (a killed primary cannot answer at once)')
  const first = Math.min(...affected.map((s) => s.at))
  const last = Math.max(...affected.map((s) => s.at))
  const before = samples.filter((s) => s.at < 0).length
  t.diagnostic(
    `${label}: ${samples.length} requests (${before} before the kill); affected window +${first.toFixed(0)} ms .. +${last.toFixed(0)} ms after the kill; ` +
      `affected ${affected.length} (fail-closed: ${closedAffected.length} × 429 with Retry-After; fail-open: ${openAffected.length} × 200 unlimited); ` +
      `other 5xx: 0; slowest request ${slowest.toFixed(0)} ms (Redis timeout ${TIMEOUT_MS} ms)`,
  )
}

describe('rate limiting through a Redis failover', { skip: sentinelSkipReason(), timeout: 300_000 }, () => {
  // Both deployments start at once, before either test: nothing is timed while they start (and
  // their start blocks the event loop on redis-cli at times). The failovers, which are timed, run
  // one after the other.
  let set: SentinelSet | undefined
  let cluster: RedisCluster | undefined
  before(async () => {
    const [s, c] = await Promise.allSettled([SentinelSet.start(), RedisCluster.start()])
    if (s.status === 'fulfilled') set = s.value
    if (c.status === 'fulfilled') cluster = c.value
    if (s.status === 'rejected') throw s.reason
    if (c.status === 'rejected') throw c.reason
  })
  after(async () => {
    await set?.stop()
    await cluster?.stop()
  })

  it('Sentinel: primary killed; the sentinels promote the replica and the limiter follows', async (t) => {
    const sentinels = set!
    assert.equal(sentinels.currentPrimary(), sentinels.primary)
    const samples = await failover(
      t,
      sentinels.url,
      () => sentinels.killPrimary(),
      () => `sentinels name ${sentinels.currentPrimary()} as primary; the replica is ${sentinels.replica}`,
    )
    assert.equal(sentinels.currentPrimary(), sentinels.replica, 'the sentinels name the replica as primary')
    judge(t, samples, 'Sentinel')
  })

  it('Cluster: one of three primaries killed; its replica takes over its slots and the limiter follows', async (t) => {
    const nodes = cluster!
    const primaries = nodes.primaries()
    assert.equal(primaries.length, 3)
    const victim = primaries[0]!
    const survivor = nodes.ports.find((p) => p !== victim)!
    const samples = await failover(
      t,
      nodes.url,
      () => nodes.kill(victim),
      () => `primaries now ${nodes.primaries(survivor).join(', ')}; killed ${victim}`,
    )
    assert.equal(nodes.primaries(survivor).length, 3, 'a replica was promoted')
    assert.ok(!nodes.primaries(survivor).includes(victim))
    judge(t, samples, 'Cluster')
  })
})
