import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadRateLimitConfig } from '../../src/ratelimit/config.ts'
import { createRateLimiter } from '../../src/ratelimit/limiter.ts'
import { ROUTES, tinyApp } from './support/app.ts'
import { recordingLogger } from './support/logger.ts'

function limiterWith(env: Record<string, string> = {}) {
  const config = loadRateLimitConfig({ AUTHGATE_RATE_LIMIT: '3/1m', ...env }, ROUTES)
  return createRateLimiter(config, recordingLogger())
}

const post = (url: string, remoteAddress = '203.0.113.7', headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url,
  remoteAddress,
  headers,
})

describe('rate-limit hook on a Fastify app', () => {
  it('passes a burst with RateLimit headers, then answers 429 without calling the handler', async (t) => {
    const limiter = limiterWith()
    const { app, handled } = tinyApp(limiter)
    t.after(() => limiter.close())
    for (let i = 0; i < 3; i++) {
      const res = await app.inject(post('/signup'))
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['ratelimit-policy'], '"default";q=3;w=60')
      assert.equal(res.headers.ratelimit, `"default";r=${2 - i};t=20`)
    }
    const denied = await app.inject(post('/signup'))
    assert.equal(denied.statusCode, 429)
    assert.deepEqual(denied.json(), {
      code: 429,
      error_code: 'over_request_rate_limit',
      msg: 'Request rate limit reached',
    })
    assert.equal(denied.headers['x-sb-error-code'], 'over_request_rate_limit')
    assert.equal(denied.headers['retry-after'], '20')
    assert.equal(denied.headers['ratelimit-policy'], '"default";q=3;w=60')
    assert.equal(denied.headers.ratelimit, '"default";r=0;t=20')
    assert.equal(handled.get('POST /signup'), 3, 'the backend stand-in was called for the allowed requests only')
    assert.equal(limiter.counters.allowed, 3)
    assert.equal(limiter.counters.denied, 1)
  })

  it('answers in the 2024-01-01 error shape when the client asks for it', async (t) => {
    const limiter = limiterWith({ AUTHGATE_RATE_LIMIT: '1/1m' })
    const { app } = tinyApp(limiter)
    t.after(() => limiter.close())
    await app.inject(post('/token'))
    const denied = await app.inject(post('/token', '203.0.113.7', { 'x-supabase-api-version': '2024-01-01' }))
    assert.equal(denied.statusCode, 429)
    assert.deepEqual(denied.json(), { code: 'over_request_rate_limit', message: 'Request rate limit reached' })
    assert.equal(denied.headers['x-supabase-api-version'], '2024-01-01')
    assert.equal(denied.headers['retry-after'], '60')
  })

  it('never limits a route that is not limited', async (t) => {
    const limiter = limiterWith({ AUTHGATE_RATE_LIMIT: '1/1h' })
    const { app, handled } = tinyApp(limiter)
    t.after(() => limiter.close())
    assert.equal(limiter.hookFor('GET', '/settings'), undefined)
    for (let i = 0; i < 50; i++) {
      const res = await app.inject({ method: 'GET', url: '/settings', remoteAddress: '203.0.113.7' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers.ratelimit, undefined)
    }
    assert.equal(handled.get('GET /settings'), 50)
  })

  it('keeps buckets per route and per client', async (t) => {
    const limiter = limiterWith({ AUTHGATE_RATE_LIMIT: '1/1h' })
    const { app } = tinyApp(limiter)
    t.after(() => limiter.close())
    assert.equal((await app.inject(post('/signup', '198.51.100.1'))).statusCode, 200)
    assert.equal((await app.inject(post('/signup', '198.51.100.1'))).statusCode, 429)
    assert.equal((await app.inject(post('/token', '198.51.100.1'))).statusCode, 200, 'another route has its own bucket')
    assert.equal(
      (await app.inject(post('/signup', '198.51.100.2'))).statusCode,
      200,
      'another client has its own bucket',
    )
  })

  it('gives PATCH and DELETE /passkeys/{id} one bucket per client, whatever the id', async (t) => {
    const limiter = limiterWith({ AUTHGATE_RATE_LIMIT_ROUTES: 'PATCH /passkeys/{id}=2/1h,DELETE /passkeys/{id}=2/1h' })
    const { app, handled } = tinyApp(limiter)
    t.after(() => limiter.close())
    const statuses = []
    for (const [method, id] of [
      ['PATCH', 'a'],
      ['DELETE', 'b'],
      ['PATCH', 'c'],
      ['DELETE', 'd'],
    ] as const) {
      statuses.push((await app.inject({ method, url: `/passkeys/${id}`, remoteAddress: '203.0.113.9' })).statusCode)
    }
    assert.deepEqual(statuses, [200, 200, 429, 429])
    assert.equal((handled.get('PATCH /passkeys/{id}') ?? 0) + (handled.get('DELETE /passkeys/{id}') ?? 0), 2)
    const res = await app.inject({ method: 'PATCH', url: '/passkeys/x', remoteAddress: '203.0.113.10' })
    assert.equal(res.headers['ratelimit-policy'], '"passkeys-id";q=2;w=3600')
  })

  it('keys IPv6 clients by their /64 and IPv4-mapped addresses by the IPv4 address', async (t) => {
    const limiter = limiterWith({ AUTHGATE_RATE_LIMIT: '1/1h' })
    const { app } = tinyApp(limiter)
    t.after(() => limiter.close())
    assert.equal((await app.inject(post('/otp', '2001:db8:1:2::1'))).statusCode, 200)
    assert.equal((await app.inject(post('/otp', '2001:db8:1:2:ffff::9'))).statusCode, 429, 'same /64')
    assert.equal((await app.inject(post('/otp', '2001:db8:1:3::1'))).statusCode, 200, 'next /64')
    assert.equal((await app.inject(post('/otp', '192.0.2.5'))).statusCode, 200)
    assert.equal((await app.inject(post('/otp', '::ffff:192.0.2.5'))).statusCode, 429, 'IPv4-mapped is the same client')
  })

  describe('client identity behind proxies', () => {
    it('without trusted proxies, a spoofed X-Forwarded-For creates no new budget', async (t) => {
      const limiter = limiterWith({ AUTHGATE_RATE_LIMIT: '2/1h' })
      const { app, handled } = tinyApp(limiter)
      t.after(() => limiter.close())
      const statuses = []
      for (let i = 0; i < 6; i++) {
        statuses.push(
          (await app.inject(post('/recover', '203.0.113.7', { 'x-forwarded-for': `10.9.9.${i}` }))).statusCode,
        )
      }
      assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429])
      assert.equal(handled.get('POST /recover'), 2)
    })

    it('with a trusted proxy, each forwarded client has its own budget; untrusted peers still cannot spoof', async (t) => {
      const limiter = limiterWith({ AUTHGATE_RATE_LIMIT: '1/1h' })
      const { app } = tinyApp(limiter, { trustProxy: ['10.0.0.0/8'] })
      t.after(() => limiter.close())
      const viaProxy = (client: string) => app.inject(post('/resend', '10.0.0.2', { 'x-forwarded-for': client }))
      assert.equal((await viaProxy('198.51.100.1')).statusCode, 200)
      assert.equal((await viaProxy('198.51.100.2')).statusCode, 200, 'a second client behind the proxy')
      assert.equal((await viaProxy('198.51.100.1')).statusCode, 429, 'the first client again')
      // Right-most untrusted entry: a client prepending addresses does not escape its bucket.
      assert.equal((await viaProxy('1.2.3.4, 198.51.100.2')).statusCode, 429)

      const direct = (spoof: string) => app.inject(post('/resend', '192.0.2.99', { 'x-forwarded-for': spoof }))
      assert.equal((await direct('198.51.100.50')).statusCode, 200)
      assert.equal((await direct('198.51.100.51')).statusCode, 429, 'an untrusted peer is keyed by its own address')
    })
  })
})
