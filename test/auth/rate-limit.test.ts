import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { withFakeBackend } from '../support/app.ts'

const JSON_CT = { 'content-type': 'application/json' }

describe('rate limiting on the mounted routes (memory store)', () => {
  test('a burst of the allowed size passes with RateLimit headers, the next gets 429 and the backend is not contacted', async () => {
    const h = await withFakeBackend({}, { rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMIT: '3/1m' }) })
    try {
      for (let i = 0; i < 3; i++) {
        const res = await h.app.inject({
          method: 'POST',
          url: '/auth/recover',
          payload: '{"email":"a@example.com"}',
          headers: JSON_CT,
          remoteAddress: '198.51.100.1',
        })
        assert.equal(res.statusCode, 200)
        // Set by the limiter's hook, kept by the forwarder next to the backend's headers.
        assert.match(String(res.headers['ratelimit']), new RegExp(`r=${2 - i}`))
        assert.match(String(res.headers['ratelimit-policy']), /q=3;w=60/)
      }
      assert.equal(h.backend.requests.length, 3)
      const denied = await h.app.inject({
        method: 'POST',
        url: '/auth/recover',
        payload: '{"email":"a@example.com"}',
        headers: { ...JSON_CT, 'x-supabase-api-version': '2024-01-01' },
        remoteAddress: '198.51.100.1',
      })
      assert.equal(denied.statusCode, 429)
      assert.equal(denied.json().code, 'over_request_rate_limit')
      const retry = Number(denied.headers['retry-after'])
      assert.ok(retry >= 19 && retry <= 20, `Retry-After ${retry}`)
      assert.equal(h.backend.requests.length, 3)
      // Another client has its own budget; an unlimited route never gets 429.
      const other = await h.app.inject({
        method: 'POST',
        url: '/auth/recover',
        payload: '{"email":"a@example.com"}',
        headers: JSON_CT,
        remoteAddress: '198.51.100.2',
      })
      assert.equal(other.statusCode, 200)
      for (let i = 0; i < 10; i++) {
        const res = await h.app.inject({ method: 'GET', url: '/auth/settings', remoteAddress: '198.51.100.1' })
        assert.equal(res.statusCode, 200)
        assert.equal(res.headers['ratelimit'], undefined)
      }
    } finally {
      await h.close()
    }
  })

  test('invalid bodies count too: the limit runs before the body is read', async () => {
    // An e-mail without a password (`{}` alone is a valid anonymous sign-in).
    const NO_PASSWORD = '{"email":"a@example.com"}'
    const h = await withFakeBackend({}, { rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMIT: '2/1m' }) })
    try {
      for (let i = 0; i < 2; i++) {
        const res = await h.app.inject({ method: 'POST', url: '/auth/signup', payload: NO_PASSWORD, headers: JSON_CT })
        assert.equal(res.statusCode, 400)
      }
      const res = await h.app.inject({ method: 'POST', url: '/auth/signup', payload: NO_PASSWORD, headers: JSON_CT })
      assert.equal(res.statusCode, 429)
      assert.equal(res.json().error_code, 'over_request_rate_limit')
    } finally {
      await h.close()
    }
  })

  test('when an operator limits PATCH and DELETE /passkeys/{id}, they share one bucket per client whatever the id', async () => {
    const rl = loadRateLimitSettings({
      AUTHGATE_RATE_LIMITED_ROUTES: 'PATCH /passkeys/{id},DELETE /passkeys/{id}',
      AUTHGATE_RATE_LIMIT: '3/1m',
      // The per-account limit and the e-mail budget are not per-IP limits: off, so the last check
      // sees the per-IP list alone.
      AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /recover=off',
      AUTHGATE_EMAIL_BUDGET: 'off',
    })
    const h = await withFakeBackend({}, { rateLimit: rl })
    try {
      const statuses: number[] = []
      for (const [method, id] of [
        ['PATCH', 'a'],
        ['DELETE', 'b'],
        ['PATCH', 'c'],
        ['DELETE', 'd'],
      ] as const) {
        const res = await h.app.inject({
          method,
          url: `/auth/passkeys/${id}`,
          ...(method === 'PATCH' ? { payload: '{"friendly_name":"x"}', headers: JSON_CT } : {}),
        })
        statuses.push(res.statusCode)
      }
      assert.deepEqual(statuses, [200, 200, 200, 429])
      // The default nine are no longer limited under this list.
      for (let i = 0; i < 5; i++)
        assert.equal(
          (
            await h.app.inject({
              method: 'POST',
              url: '/auth/recover',
              payload: '{"email":"a@example.com"}',
              headers: JSON_CT,
            })
          ).statusCode,
          200,
        )
    } finally {
      await h.close()
    }
  })

  test('spoofed X-Forwarded-For from an untrusted peer does not create new budgets', async () => {
    const h = await withFakeBackend({}, { rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMIT: '1/1m' }) })
    try {
      const first = await h.app.inject({
        method: 'POST',
        url: '/auth/otp',
        payload: '{"email":"a@example.com"}',
        headers: { ...JSON_CT, 'x-forwarded-for': '1.1.1.1' },
        remoteAddress: '203.0.113.7',
      })
      assert.equal(first.statusCode, 200)
      const second = await h.app.inject({
        method: 'POST',
        url: '/auth/otp',
        payload: '{"email":"a@example.com"}',
        headers: { ...JSON_CT, 'x-forwarded-for': '2.2.2.2' },
        remoteAddress: '203.0.113.7',
      })
      assert.equal(second.statusCode, 429)
    } finally {
      await h.close()
    }
  })
})
