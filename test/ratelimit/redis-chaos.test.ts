/**
 * Redis killed and restarted under constant load, through the whole service: two authgate services
 * (configured from the environment as an operator would, listening on real ports, in front of a
 * fake Supabase Auth), one failing open and one failing closed, share a redis-server this test
 * starts on its own port and directory. Requests go over HTTP, open loop (sent on a schedule, not
 * after the previous answer), so a request that hung would show. Redis is killed with SIGKILL,
 * left dead for 3 s and started again on the same port.
 *
 * Held: while Redis is gone, the fail-open service lets limited requests through, the fail-closed
 * one answers 429 with `Retry-After: 1` (docs/rate-limiting.md); no request waits past the Redis
 * timeout (plus room for a loaded machine); no other status, no 5xx, on limited routes or others;
 * after the restart limiting is back without restarting authgate. The window and counts are
 * reported (RELIABILITY.md).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { Agent, request } from 'undici'
import { buildApp } from '../../src/app.ts'
import { loadServiceSettings } from '../../src/settings.ts'
import { startFakeBackend } from '../support/fake-backend.ts'
import { redisServerSkipReason, ThrowawayRedis, uniquePrefix } from './support/redis.ts'

const TIMEOUT_MS = 250
/** Scheduling slack on a loaded 2-core machine; a hang would be far beyond it. */
const SLACK_MS = 2000
const DOWN_MS = 3000
/** Each tick sends one limited request to each service and one unlimited request. */
const TICK_MS = 10
const UNAVAILABLE = 'Rate limiting is temporarily unavailable; try again shortly'
const BODY = '{"email":"a@example.com","password":"secret123"}'

type Instance = 'closed' | 'open'
interface Sample {
  instance: Instance
  route: 'limited' | 'unlimited'
  /** When it was sent: performance.now(), then milliseconds since the kill (negative before it). */
  at: number
  status: number
  ms: number
  /** The store decided (a RateLimit header); false when the failure policy answered. */
  decided: boolean
  retryAfter: string | undefined
  message: string | undefined
}

const signed = (ms: number) => `${ms < 0 ? '−' : '+'}${Math.abs(ms).toFixed(0)}`

let nextClient = 0
const freshClient = () => {
  nextClient++
  return `10.${(nextClient >> 16) & 255}.${(nextClient >> 8) & 255}.${nextClient & 255}`
}

describe(
  'chaos: Redis killed and restarted under load, through the service',
  { skip: redisServerSkipReason(), timeout: 60_000 },
  () => {
    it('each policy answers while Redis is gone, nothing waits past the timeout, limiting comes back', async (t) => {
      const redis = await ThrowawayRedis.start()
      const backend = await startFakeBackend()
      const prefix = uniquePrefix('chaos')
      const services: Partial<Record<Instance, FastifyInstance>> = {}
      const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000 })
      t.after(async () => {
        await agent.close()
        for (const app of Object.values(services)) await app.close()
        await backend.close()
        await redis.remove()
      })
      const urls = {} as Record<Instance, string>
      for (const policy of ['closed', 'open'] as const) {
        const settings = loadServiceSettings({
          AUTHGATE_BACKEND_URL: backend.url,
          AUTHGATE_CACHE_TTL: 'off',
          // The test is the proxy that names each client.
          AUTHGATE_TRUSTED_PROXIES: '127.0.0.1',
          AUTHGATE_RATE_LIMIT: '3/1h',
          AUTHGATE_REDIS_URL: redis.url,
          AUTHGATE_REDIS_TIMEOUT: `${TIMEOUT_MS}ms`,
          AUTHGATE_REDIS_KEY_PREFIX: prefix,
          AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: policy,
          // The per-IP limit is what is followed through the outage: the per-account limit and the
          // e-mail budget would also answer the repeated sign-up.
          AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /signup=off',
          AUTHGATE_EMAIL_BUDGET: 'off',
        })
        const app = await buildApp({ config: settings.core, rateLimit: settings.rateLimit, openapi: settings.openapi })
        services[policy] = app
        await app.listen({ port: 0, host: '127.0.0.1' })
        assert.equal(await app.authgate.rateLimiter!.ready(10_000), true)
        urls[policy] = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
      }

      const send = async (instance: Instance, route: Sample['route'], ip: string): Promise<Sample> => {
        const start = performance.now()
        const res = await request(`${urls[instance]}/auth/${route === 'limited' ? 'signup' : 'settings'}`, {
          dispatcher: agent,
          method: route === 'limited' ? 'POST' : 'GET',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
          ...(route === 'limited' ? { body: BODY } : {}),
        })
        const text = await res.body.text()
        const ms = performance.now() - start
        let message: string | undefined
        try {
          message = (JSON.parse(text) as { msg?: string }).msg
        } catch {
          message = undefined
        }
        return {
          instance,
          route,
          at: start,
          status: res.statusCode,
          ms,
          decided: res.headers.ratelimit !== undefined,
          retryAfter: res.headers['retry-after'] as string | undefined,
          message,
        }
      }
      /** Both services share one budget: 3 allowed, the 4th denied, whichever answers. */
      const assertLimitsHold = async (what: string) => {
        const ip = freshClient()
        const statuses = []
        for (const instance of ['closed', 'open', 'closed', 'open'] as const)
          statuses.push((await send(instance, 'limited', ip)).status)
        assert.deepEqual(statuses, [200, 200, 200, 429], `limits ${what}`)
      }

      await assertLimitsHold('before the kill')
      const samples: Sample[] = []
      const inFlight = new Set<Promise<void>>()
      let running = true
      const load = (async () => {
        // Open loop: each tick's requests go out on time, whether or not earlier ones have answered.
        for (let next = performance.now(); running; next += TICK_MS) {
          for (const [instance, route] of [
            ['closed', 'limited'],
            ['open', 'limited'],
            [nextClient % 2 === 0 ? 'closed' : 'open', 'unlimited'],
          ] as const) {
            const p = send(instance, route, freshClient()).then(
              (s) => void samples.push(s),
              (err: unknown) => {
                samples.push({
                  instance,
                  route,
                  at: NaN,
                  status: 0,
                  ms: NaN,
                  decided: false,
                  retryAfter: undefined,
                  message: String(err),
                })
              },
            )
            inFlight.add(p)
            void p.finally(() => inFlight.delete(p))
          }
          await sleep(Math.max(0, next + TICK_MS - performance.now()))
        }
      })()

      await sleep(1500)
      const killStart = performance.now()
      await redis.stop()
      const zero = (killStart + performance.now()) / 2
      await sleep(DOWN_MS)
      const restartAt = performance.now() - zero
      await redis.restart()
      const upAt = performance.now() - zero
      // Until both services have decided everything for 2 s (at most 30 s).
      const deadline = performance.now() + 30_000
      for (;;) {
        await sleep(250)
        const now = performance.now() - zero
        const lastAffected = Math.max(
          upAt,
          ...samples.filter((s) => s.route === 'limited' && !s.decided).map((s) => s.at - zero),
        )
        if (now - lastAffected > 2000) break
        assert.ok(performance.now() < deadline, 'limiting did not come back within 30 s of the restart')
      }
      running = false
      await load
      await Promise.all(inFlight)
      await assertLimitsHold('after the restart, without restarting authgate')
      for (const s of samples) s.at -= zero

      const other = samples.filter(
        (s) =>
          !(s.status === 200) && !(s.status === 429 && s.instance === 'closed' && s.route === 'limited' && !s.decided),
      )
      assert.deepEqual(
        other,
        [],
        'only the policy answers: 200, or 429 from the fail-closed service while Redis is gone',
      )
      const slowest = Math.max(...samples.map((s) => s.ms))
      assert.ok(
        slowest < TIMEOUT_MS + SLACK_MS,
        `a request waited ${slowest.toFixed(0)} ms (Redis timeout ${TIMEOUT_MS} ms)`,
      )
      const affected = samples.filter((s) => s.route === 'limited' && !s.decided)
      const closedAffected = affected.filter((s) => s.instance === 'closed')
      const openAffected = affected.filter((s) => s.instance === 'open')
      for (const s of closedAffected) {
        assert.equal(s.status, 429)
        assert.equal(s.retryAfter, '1')
        assert.equal(s.message, UNAVAILABLE)
      }
      for (const s of openAffected) assert.equal(s.status, 200, 'fail-open lets the request through')
      assert.ok(closedAffected.length > 0 && openAffected.length > 0, 'the outage was seen by both services')
      const first = Math.min(...affected.map((s) => s.at))
      const last = Math.max(...affected.map((s) => s.at))
      assert.ok(first >= -TIMEOUT_MS - SLACK_MS, `affected before the kill (+${first.toFixed(0)} ms)`)
      assert.ok(
        last <= upAt + 1000 + SLACK_MS,
        `still affected +${(last - upAt).toFixed(0)} ms after Redis answered again`,
      )
      const decidedLimited = samples.filter((s) => s.route === 'limited' && s.decided)
      for (const s of decidedLimited) assert.equal(s.status, 200, 'a fresh client is allowed')
      const unlimited = samples.filter((s) => s.route === 'unlimited')
      t.diagnostic(
        `Redis killed at 0 ms, restarted at +${restartAt.toFixed(0)} ms, answering at +${upAt.toFixed(0)} ms; ` +
          `${samples.length} requests (${samples.filter((s) => s.at < 0).length} before the kill; ${unlimited.length} to an unlimited route, all 200); ` +
          `affected window ${signed(first)} ms .. ${signed(last)} ms; affected ${affected.length} ` +
          `(fail-closed: ${closedAffected.length} × 429 with Retry-After: 1; fail-open: ${openAffected.length} × 200 unlimited); ` +
          `other statuses 0; slowest request ${slowest.toFixed(0)} ms, slowest affected ${Math.max(...affected.map((s) => s.ms)).toFixed(0)} ms`,
      )
    })
  },
)
