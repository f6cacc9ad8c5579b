/**
 * Supabase Auth killed and restarted under constant load: while it is gone every request gets the
 * gateway's 502 (or 504) in its own error shape, fast; readiness stays 200 and reports the backend
 * down (docs/decisions.md, D24); once it is back, requests succeed again without restarting authgate.
 * The window and the counts are reported (RELIABILITY.md).
 *
 * Both run with authgate's default limits on (per client IP, per account, the e-mail and SMS
 * budgets), stored in a redis-server of the test's own; the second freezes and then kills that
 * Redis under a load of sign-ins and recovery requests, and holds every answer to
 * AUTHGATE_REDIS_TIMEOUT (plus room for a loaded machine).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { backendOf } from '../src/core/backend-timing.ts'
import { loadRateLimitSettings } from '../src/settings.ts'
import { redisServerSkipReason, ThrowawayRedis, uniquePrefix } from '../test/ratelimit/support/redis.ts'
import { startStack } from './support/stack.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'

const skip = (await backendUnavailableReason()) ?? redisServerSkipReason()
const REDIS_TIMEOUT_MS = 500
/** Scheduling slack on a loaded 2-core machine: less than the three more timeouts a request would wait if each of its limits asked a hung Redis in turn. */
const SLACK_MS = 1000

/** authgate's defaults, with a Redis store of the test's own. */
const defaultLimits = (redis: ThrowawayRedis, label: string) =>
  loadRateLimitSettings({
    AUTHGATE_REDIS_URL: redis.url,
    AUTHGATE_REDIS_TIMEOUT: `${REDIS_TIMEOUT_MS}ms`,
    AUTHGATE_REDIS_KEY_PREFIX: uniquePrefix(label),
  })

interface Sample {
  at: number
  status: number
  ms: number
  errorCode: string | undefined
}

describe('chaos: Supabase Auth killed and restarted under load', { skip, timeout: 180_000 }, () => {
  it('502 in our shape while it is gone, readiness stays up, recovery without a restart', async (t) => {
    const redis = await ThrowawayRedis.start()
    const stack = await startStack({
      database: 'authgate_e2e_chaos',
      label: 'chaos',
      rateLimit: defaultLimits(redis, 'e2e-chaos'),
    })
    let backend: SupabaseAuthServer = stack.backend
    const agent = new Agent({ connections: 8 })
    t.after(async () => {
      await agent.close()
      await stack.app.close().catch(() => undefined)
      await backend.stop()
      await redis.remove()
    })

    const samples: Sample[] = []
    let zero = performance.now()
    let running = true
    const load = (async () => {
      while (running) {
        const start = performance.now()
        const res = await request(`${stack.url}${stack.prefix}/health`, { dispatcher: agent })
        const text = await res.body.text()
        let errorCode: string | undefined
        try {
          errorCode = (JSON.parse(text) as { error_code?: string }).error_code
        } catch {
          errorCode = undefined
        }
        samples.push({ at: start - zero, status: res.statusCode, ms: performance.now() - start, errorCode })
        await sleep(10)
      }
    })()

    await sleep(1000)
    const port = backend.port
    zero = performance.now()
    await backend.stop()
    // Readiness reuses a probe of the backend for 1 s: by now it has probed the stopped one.
    await sleep(2000)
    const readyz = await request(`${stack.url}/readyz`, { dispatcher: agent })
    assert.equal(readyz.statusCode, 200, 'readiness does not follow the backend')
    assert.equal(((await readyz.body.json()) as { backend: string }).backend, 'down')
    const restartAt = performance.now() - zero
    backend = await startSupabaseAuth({
      publicUrl: stack.publicUrl,
      port,
      database: 'authgate_e2e_chaos',
      freshDatabase: false,
    })
    const upAt = performance.now() - zero
    // A second of answers after the first 500 ms back, each of which must succeed.
    await sleep(1500)
    running = false
    await load

    const failed = samples.filter((s) => s.status !== 200)
    const unexpected = failed.filter(
      (s) =>
        !(s.status === 502 && s.errorCode === 'backend_unreachable') &&
        !(s.status === 504 && s.errorCode === 'request_timeout'),
    )
    assert.deepEqual(unexpected, [], 'only the gateway’s own 502/504 while the backend is gone')
    assert.ok(failed.length > 0, 'the outage was seen')
    assert.ok(
      failed.every((s) => s.at >= -50 && s.at <= upAt + 50),
      'failures only while the backend was down',
    )
    const after = samples.filter((s) => s.at > upAt + 500)
    assert.ok(after.length > 0 && after.every((s) => s.status === 200), 'every request succeeds once it is back')
    const slowestFailure = Math.max(...failed.map((s) => s.ms))
    t.diagnostic(
      `Supabase Auth killed at 0 ms, restarted at +${restartAt.toFixed(0)} ms, answering at +${upAt.toFixed(0)} ms; ` +
        `${samples.length} requests, ${failed.length} failed (${failed.filter((s) => s.status === 502).length} × 502 backend_unreachable, ` +
        `${failed.filter((s) => s.status === 504).length} × 504), from +${Math.min(...failed.map((s) => s.at)).toFixed(0)} ms to +${Math.max(...failed.map((s) => s.at)).toFixed(0)} ms; ` +
        `slowest failed answer ${slowestFailure.toFixed(0)} ms; first success after the restart at +${Math.min(...samples.filter((s) => s.at > restartAt && s.status === 200).map((s) => s.at)).toFixed(0)} ms`,
    )
  })
})

describe('chaos: Redis frozen, then killed, under sign-ins with the default limits', { skip, timeout: 180_000 }, () => {
  it('no answer waits past the Redis timeout, no 5xx, and limiting comes back', async (t) => {
    const redis = await ThrowawayRedis.start()
    const own: Array<{ at: number; ms: number }> = []
    const stack = await startStack({
      database: 'authgate_e2e_chaos_redis',
      label: 'chaos-redis',
      // The test is the proxy that names each client.
      trustedProxies: ['127.0.0.1/32'],
      rateLimit: defaultLimits(redis, 'e2e-chaos-redis'),
      // authgate's own time per answer: all of it, less the wait for Supabase Auth's answer head.
      beforeListen: (app) => {
        app.addHook('onResponse', async (request, reply) => {
          own.push({ at: performance.now(), ms: reply.elapsedTime - (backendOf(request)?.durationMs ?? 0) })
        })
      },
    })
    const agent = new Agent({ connections: 32 })
    t.after(async () => {
      await agent.close()
      await stack.app.close().catch(() => undefined)
      await stack.backend.stop()
      await redis.remove()
    })
    const limiter = stack.app.authgate.rateLimiter!
    assert.equal(await limiter.ready(10_000), true)
    const PASSWORD = 'chaos-password-1'
    const created = await fetch(`${stack.backend.url}/admin/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.backend.serviceRoleJwt()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'chaos@example.com', password: PASSWORD, email_confirm: true }),
    })
    assert.equal(created.status, 200, await created.text())

    let client = 0
    const freshIp = () => {
      client++
      return `10.77.${(client >> 8) & 255}.${client & 255}`
    }
    type Kind = 'sign-in' | 'wrong' | 'recover' | 'health'
    interface RedisSample {
      kind: Kind
      at: number
      status: number
      ms: number
      code: string | undefined
    }
    const send = async (kind: Kind, n: number): Promise<RedisSample> => {
      const start = performance.now()
      const [method, path, body] =
        kind === 'health'
          ? (['GET', '/health', undefined] as const)
          : kind === 'recover'
            ? (['POST', '/recover', { email: `chaos-${n}@example.com` }] as const)
            : ([
                'POST',
                '/token?grant_type=password',
                kind === 'sign-in'
                  ? { email: 'chaos@example.com', password: PASSWORD }
                  : { email: `nobody-${n % 5}@example.com`, password: 'wrong-password' },
              ] as const)
      const res = await request(`${stack.url}${stack.prefix}${path}`, {
        dispatcher: agent,
        method,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': freshIp() },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      })
      const text = await res.body.text()
      let code: string | undefined
      try {
        code = (JSON.parse(text) as { error_code?: string }).error_code
      } catch {
        code = undefined
      }
      return { kind, at: start, status: res.statusCode, ms: performance.now() - start, code }
    }

    const samples: RedisSample[] = []
    const inFlight = new Set<Promise<void>>()
    let running = true
    // A correct sign-in costs Supabase Auth a bcrypt comparison: one a second, so that it keeps up
    // on a loaded two-core machine.
    const kinds: Kind[] = [
      'sign-in',
      ...Array.from({ length: 13 }, () => ['wrong', 'recover', 'health'] as const).flat(),
    ]
    const load = (async () => {
      // Open loop: a request every 25 ms whether or not earlier ones have answered.
      for (let n = 0, next = performance.now(); running; n++, next += 25) {
        const p = send(kinds[n % kinds.length]!, n).then((s) => void samples.push(s))
        inFlight.add(p)
        void p.finally(() => inFlight.delete(p))
        await sleep(Math.max(0, next + 25 - performance.now()))
      }
      await Promise.all(inFlight)
    })()

    const failedOpenBefore = limiter.counters.failedOpen
    await sleep(1000)
    const frozenAt = performance.now()
    redis.freeze()
    await sleep(2000)
    redis.thaw()
    const thawedAt = performance.now()
    await sleep(1000)
    const killedAt = performance.now()
    await redis.stop()
    await sleep(1500)
    await redis.restart()
    const restartedAt = performance.now()
    assert.equal(await limiter.ready(10_000), true)
    await sleep(1500)
    running = false
    await load

    const rel = (ms: number) => ms - frozenAt
    const unexpected = samples.filter(
      (s) =>
        !(s.status === 200) &&
        !(s.status === 400 && s.kind === 'wrong' && s.code === 'invalid_credentials') &&
        !(s.status === 429 && ['over_request_rate_limit', 'over_email_send_rate_limit'].includes(s.code ?? '')),
    )
    assert.deepEqual(unexpected, [], 'no 5xx and no answer outside the limits')
    // Supabase Auth's own time is its own: what authgate adds waits on Redis at most once a request.
    const slow = own.filter((o) => o.ms > REDIS_TIMEOUT_MS + SLACK_MS)
    assert.deepEqual(slow, [], `authgate's own time within ${REDIS_TIMEOUT_MS} ms (+${SLACK_MS} ms of slack)`)
    assert.ok(own.length >= samples.length)
    const frozen = samples.filter((s) => s.at >= frozenAt && s.at < thawedAt && s.kind !== 'health')
    const killed = samples.filter((s) => s.at >= killedAt && s.at < restartedAt && s.kind !== 'health')
    assert.ok(frozen.length > 0 && killed.length > 0, 'load went on through both outages')
    // While Redis was frozen the failure policy (open) answered, after one timeout per request.
    assert.ok(limiter.counters.failedOpen > failedOpenBefore)
    assert.ok(
      frozen.filter((s) => s.kind === 'sign-in').every((s) => s.status === 200),
      'the account holder signs in throughout',
    )

    // Limiting is back on the restarted (empty) Redis: a fresh account takes 10 failures, then 429.
    const after: number[] = []
    for (let i = 0; i < 11; i++) {
      const res = await request(`${stack.url}${stack.prefix}/token?grant_type=password`, {
        dispatcher: agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': freshIp() },
        body: JSON.stringify({ email: 'after-restart@example.com', password: 'wrong-password' }),
      })
      await res.body.text()
      after.push(res.statusCode)
    }
    assert.deepEqual(after, [...Array<number>(10).fill(400), 429])

    const max = (list: Array<{ ms: number }>) => Math.max(...list.map((s) => s.ms)).toFixed(0)
    const ownWhile = (from: number, to: number) => own.filter((o) => o.at >= from && o.at < to + REDIS_TIMEOUT_MS)
    t.diagnostic(
      `Redis frozen at 0 ms for ${(thawedAt - frozenAt).toFixed(0)} ms, killed at +${rel(killedAt).toFixed(0)} ms, ` +
        `back at +${rel(restartedAt).toFixed(0)} ms; ${samples.length} requests (sign-ins, wrong passwords, recovery, health), ` +
        `${samples.filter((s) => s.status === 429).length} refused by a limit, no 5xx; authgate's own time at most ` +
        `${max(ownWhile(frozenAt, thawedAt))} ms while frozen (timeout ${REDIS_TIMEOUT_MS} ms), ${max(ownWhile(killedAt, restartedAt))} ms while killed, ` +
        `${max(own)} ms overall; slowest whole answer ${max(samples)} ms; ` +
        `${limiter.counters.failedOpen - failedOpenBefore} decisions let through by the failure policy, ` +
        `${limiter.counters.storeErrors} store errors`,
    )
  })
})
