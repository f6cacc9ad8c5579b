import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AuthgateConfigError } from '../../src/config.ts'
import { loadRateLimitConfig } from '../../src/ratelimit/config.ts'
import { parseRate } from '../../src/ratelimit/policy.ts'
import { DEFAULT_LIMITED, ROUTES } from './support/app.ts'

const load = (env: Record<string, string>) => loadRateLimitConfig(env, ROUTES)

function throwsNaming(variable: string, env: Record<string, string>, pattern?: RegExp) {
  assert.throws(
    () => load(env),
    (err: unknown) => {
      assert.ok(err instanceof AuthgateConfigError, `expected AuthgateConfigError, got ${String(err)}`)
      assert.equal(err.option, variable)
      if (pattern) assert.match(err.message, pattern)
      return true
    },
  )
}

describe('rate-limit configuration', () => {
  it('defaults: 30/5m with burst 30 on the nine routes, memory store, fail-open', () => {
    const c = load({})
    assert.deepEqual(c.defaultPolicy, { name: 'default', limit: 30, windowMs: 300_000, burst: 30 })
    assert.deepEqual([...c.routes.keys()], DEFAULT_LIMITED)
    assert.equal(c.redis, undefined)
    assert.equal(c.onRedisError, 'open')
    assert.equal(c.ipv6PrefixLength, 64)
  })

  it('parses rates and bursts', () => {
    const cases: [string, number, number, number][] = [
      ['30/5m', 30, 300_000, 30],
      ['5/1s', 5, 1000, 5],
      ['100/h', 100, 3_600_000, 100],
      ['1000/1d', 1000, 86_400_000, 1000],
      ['30/5m;burst=10', 30, 300_000, 10],
      [' 60 / 1m ; burst = 120 ', 60, 60_000, 120],
    ]
    for (const [raw, limit, windowMs, burst] of cases) {
      assert.deepEqual(parseRate('X', raw, 'default'), { name: 'default', limit, windowMs, burst }, raw)
    }
  })

  it('rejects bad rates naming the variable', () => {
    for (const raw of [
      '30',
      '30/5',
      '0/1m',
      '30/500ms',
      '30/5m;burst=0',
      '30/5m;burst=x',
      '30/5m;size=3',
      '30/5m;burst=1;burst=2',
      '-1/1m',
      '1.5/1m',
    ]) {
      throwsNaming('AUTHGATE_RATE_LIMIT', { AUTHGATE_RATE_LIMIT: raw })
    }
  })

  it('replaces the limited routes, normalising method case, and accepts none', () => {
    const c = load({ AUTHGATE_RATE_LIMITED_ROUTES: 'post /signup, PATCH /passkeys/{id}' })
    assert.deepEqual([...c.routes.keys()], ['POST /signup', 'PATCH /passkeys/{id}'])
    assert.equal(load({ AUTHGATE_RATE_LIMITED_ROUTES: 'none' }).routes.size, 0)
  })

  it('rejects unknown or malformed routes', () => {
    throwsNaming(
      'AUTHGATE_RATE_LIMITED_ROUTES',
      { AUTHGATE_RATE_LIMITED_ROUTES: 'POST /sigup' },
      /no such route "POST \/sigup"/,
    )
    throwsNaming('AUTHGATE_RATE_LIMITED_ROUTES', { AUTHGATE_RATE_LIMITED_ROUTES: 'POST /auth/signup' })
    throwsNaming('AUTHGATE_RATE_LIMITED_ROUTES', { AUTHGATE_RATE_LIMITED_ROUTES: '/signup' })
    throwsNaming('AUTHGATE_RATE_LIMIT_ROUTES', { AUTHGATE_RATE_LIMIT_ROUTES: 'POST /nope=5/1h' })
  })

  it('per-route policies override, add and remove routes', () => {
    const c = load({
      AUTHGATE_RATE_LIMIT: '10/1m',
      AUTHGATE_RATE_LIMIT_ROUTES: 'POST /token=100/5m;burst=20, POST /signup=5/1h, POST /otp=off, GET /user=60/1m',
    })
    assert.deepEqual(c.routes.get('POST /token'), { name: 'token', limit: 100, windowMs: 300_000, burst: 20 })
    assert.deepEqual(c.routes.get('POST /signup'), { name: 'signup', limit: 5, windowMs: 3_600_000, burst: 5 })
    assert.equal(c.routes.has('POST /otp'), false)
    assert.equal(c.routes.get('GET /user')?.name, 'user')
    assert.equal(c.routes.get('POST /recover'), c.defaultPolicy)
  })

  it('rejects malformed or repeated per-route entries', () => {
    throwsNaming('AUTHGATE_RATE_LIMIT_ROUTES', { AUTHGATE_RATE_LIMIT_ROUTES: 'POST /token' })
    throwsNaming('AUTHGATE_RATE_LIMIT_ROUTES', { AUTHGATE_RATE_LIMIT_ROUTES: 'POST /token=fast' })
    throwsNaming(
      'AUTHGATE_RATE_LIMIT_ROUTES',
      { AUTHGATE_RATE_LIMIT_ROUTES: 'POST /token=1/1m,post /token=2/1m' },
      /given twice/,
    )
  })

  it('routes sharing a template share one policy; different rates for them are refused', () => {
    const c = load({ AUTHGATE_RATE_LIMITED_ROUTES: 'PATCH /passkeys/{id},DELETE /passkeys/{id}' })
    assert.equal(c.routes.get('PATCH /passkeys/{id}'), c.routes.get('DELETE /passkeys/{id}'))
    throwsNaming(
      'AUTHGATE_RATE_LIMIT_ROUTES',
      { AUTHGATE_RATE_LIMIT_ROUTES: 'PATCH /passkeys/{id}=5/1m,DELETE /passkeys/{id}=6/1m' },
      /share one bucket/,
    )
    throwsNaming('AUTHGATE_RATE_LIMIT_ROUTES', {
      AUTHGATE_RATE_LIMITED_ROUTES: 'DELETE /passkeys/{id}',
      AUTHGATE_RATE_LIMIT_ROUTES: 'PATCH /passkeys/{id}=5/1m',
    })
  })

  it('reads the Redis settings', () => {
    const c = load({
      AUTHGATE_REDIS_URL: 'redis://:secret@cache:6380/2',
      AUTHGATE_REDIS_TIMEOUT: '250ms',
      AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: 'closed',
    })
    assert.deepEqual(c.redis, { url: 'redis://:secret@cache:6380/2', keyPrefix: 'authgate:rl:', timeoutMs: 250 })
    assert.equal(c.onRedisError, 'closed')
    assert.equal(load({ AUTHGATE_REDIS_URL: 'rediss://cache', AUTHGATE_REDIS_KEY_PREFIX: 'x:' }).redis?.keyPrefix, 'x:')
  })

  it('rejects bad Redis settings without echoing a password', () => {
    throwsNaming('AUTHGATE_REDIS_URL', { AUTHGATE_REDIS_URL: 'http://cache:6379' })
    assert.throws(
      () => load({ AUTHGATE_REDIS_URL: 'redis://:hunter2@[bad' }),
      (err: Error) => !err.message.includes('hunter2'),
    )
    throwsNaming('AUTHGATE_REDIS_TIMEOUT', { AUTHGATE_REDIS_TIMEOUT: 'soon' })
    throwsNaming('AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR', { AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: 'maybe' })
    throwsNaming('AUTHGATE_RATE_LIMIT_IPV6_PREFIX', { AUTHGATE_RATE_LIMIT_IPV6_PREFIX: '129' })
    throwsNaming('AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS', { AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS: '10' })
  })

  it('the route table alone says which routes are limited by default, per account and for messages', () => {
    const table = [
      { key: 'POST /a', rateLimited: true },
      { key: 'POST /b', rateLimited: false, account: 'message' as const, sendsMessages: true },
    ]
    const c = loadRateLimitConfig({}, table)
    assert.deepEqual([...c.routes.keys()], ['POST /a'])
    assert.deepEqual([...c.accounts!.routes.keys()], ['POST /b'])
    assert.deepEqual([...c.budgets!.routes], ['POST /b'])
    // A route the table gives no account cannot be limited per account.
    assert.throws(
      () => loadRateLimitConfig({ AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /a=1/1m' }, table),
      /POST \/a names no account \(routes: POST \/b\)/,
    )
  })
})
