import assert from 'node:assert/strict'
import { after, before, describe, it, test } from 'node:test'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { redactQuery } from '../../src/observability/redact.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'
import { logCapture } from '../support/log-capture.ts'

const S = (n: number) => `SeCrEt${n}x`

test('redactQuery keeps every parameter and hides only secret values', () => {
  assert.equal(
    redactQuery('grant_type=refresh_token&refresh_token=abc&redirect_to=https%3A%2F%2Fa&type=signup'),
    'grant_type=refresh_token&refresh_token=[redacted]&redirect_to=https%3A%2F%2Fa&type=signup',
  )
  assert.equal(
    redactQuery('code=1&state=2&token_hash=3&code_verifier=4&client_secret=5&password=6&flag&provider_token=7'),
    'code=[redacted]&state=[redacted]&token_hash=[redacted]&code_verifier=[redacted]&client_secret=[redacted]&password=[redacted]&flag&provider_token=[redacted]',
  )
  // Encoded names are recognised too.
  assert.equal(redactQuery('%74oken=1'), '%74oken=[redacted]')
})

describe('request log lines', () => {
  let backend: FakeBackend
  let app: FastifyInstance
  const logs = logCapture()

  before(async () => {
    backend = await startFakeBackend()
    app = await buildApp({
      rateLimit: false,
      // Every level: no secret may appear even in debug and trace lines.
      logger: { stream: logs.stream, level: 'trace' },
      // Every request reaches the fake backend: no answer from the response cache.
      config: { backendUrl: parseBackendUrl('test', backend.url), trustedProxies: ['10.0.0.0/8'], cacheTtlMs: 0 },
    })
    await app.ready()
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  const json = { 'content-type': 'application/json' }
  const form = { 'content-type': 'application/x-www-form-urlencoded' }

  it('no secret of sign-up, token, verify, callback and OAuth token requests reaches any log line', async () => {
    const requests = [
      { method: 'POST', url: '/auth/signup', headers: json, payload: `{"email":"a@example.com","password":"${S(1)}"}` },
      {
        method: 'POST',
        url: '/auth/token?grant_type=password',
        headers: { ...json, apikey: S(2) },
        payload: `{"email":"a@example.com","password":"${S(3)}"}`,
      },
      {
        method: 'POST',
        url: '/auth/token?grant_type=refresh_token',
        headers: json,
        payload: `{"refresh_token":"${S(4)}"}`,
      },
      {
        method: 'POST',
        url: '/auth/token?grant_type=pkce',
        headers: json,
        payload: `{"auth_code":"${S(5)}","code_verifier":"${S(6)}"}`,
      },
      { method: 'GET', url: `/auth/verify?token=${S(7)}&type=signup&redirect_to=https://app.example.com` },
      { method: 'GET', url: `/auth/verify?token_hash=${S(8)}&type=recovery` },
      {
        method: 'POST',
        url: '/auth/verify',
        headers: json,
        payload: `{"type":"email","token":"${S(9)}","email":"a@example.com"}`,
      },
      { method: 'POST', url: '/auth/verify', headers: json, payload: `{"type":"recovery","token_hash":"${S(10)}"}` },
      { method: 'GET', url: `/auth/callback?code=${S(11)}&state=${S(12)}` },
      {
        method: 'POST',
        url: '/auth/oauth/token',
        headers: { ...form, authorization: `Basic ${Buffer.from(`client:${S(13)}`).toString('base64')}` },
        payload: `grant_type=authorization_code&code=${S(14)}&code_verifier=${S(15)}&client_secret=${S(16)}&redirect_uri=http://localhost/cb`,
      },
      { method: 'GET', url: '/auth/user', headers: { authorization: `Bearer ${S(17)}` } },
      // Rejected by authgate: the reason is logged, never the body.
      { method: 'POST', url: '/auth/signup', headers: json, payload: `{"email":"a@example.com","password":"${S(18)}"` },
      {
        method: 'POST',
        url: '/auth/signup',
        headers: json,
        payload: `{"email":"not-an-address","password":"${S(19)}"}`,
      },
    ] as const
    for (const r of requests) await app.inject(r as unknown as InjectOptions)
    const text = logs.raw()
    for (let i = 1; i <= 19; i++) assert.ok(!text.includes(S(i)), `secret ${i} appears in the logs:\n${text}`)
    assert.ok(!text.includes(Buffer.from(`client:${S(13)}`).toString('base64')), 'basic credentials logged')

    const lines = logs.lines.filter((l) => l.msg === 'request')
    assert.equal(lines.length, requests.length, 'one line per request')
    assert.equal(logs.lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed').length, 0)
    const refresh = lines[2]!
    assert.equal(refresh.url, '/auth/token?grant_type=refresh_token', 'the query is kept, not dropped')
    assert.equal(lines[4]!.url, '/auth/verify?token=[redacted]&type=signup&redirect_to=https://app.example.com')
    assert.equal(lines[8]!.url, '/auth/callback?code=[redacted]&state=[redacted]')
    const badJson = lines[11]!
    assert.equal(badJson.status, 400)
    assert.equal(badJson.error, 'bad_json')
    assert.equal(badJson.reason, 'Could not parse request body as JSON')
    const invalid = lines[12]!
    assert.equal(invalid.error, 'validation_failed')
    assert.match(String(invalid.reason), /email/)
  })

  it('a line holds method, route template, status, durations, client IP and request id', async () => {
    const res = await app.inject({ method: 'GET', url: '/auth/settings', remoteAddress: '192.0.2.7' })
    const line = logs.lines.filter((l) => l.msg === 'request').at(-1)!
    assert.equal(line.method, 'GET')
    assert.equal(line.route, '/auth/settings')
    assert.equal(line.status, 200)
    assert.equal(typeof line.durationMs, 'number')
    assert.equal(typeof line.backendMs, 'number')
    assert.ok((line.backendMs as number) <= (line.durationMs as number) + 1)
    assert.equal(line.backendStatus, 200)
    assert.equal(line.ip, '192.0.2.7')
    assert.equal(line.reqId, res.headers['x-request-id'])
    assert.match(String(line.reqId), /^[0-9a-f-]{36}$/)
    // A template, not the URL.
    await app.inject({ method: 'DELETE', url: '/auth/passkeys/abc', headers: { authorization: 'Bearer t' } })
    assert.equal(logs.lines.filter((l) => l.msg === 'request').at(-1)!.route, '/auth/passkeys/:id')
  })

  it("X-Request-Id: generated, returned and forwarded; a trusted proxy's own is kept, a client's is not", async () => {
    backend.requests.length = 0
    const direct = await app.inject({
      method: 'GET',
      url: '/auth/settings',
      remoteAddress: '192.0.2.7',
      headers: { 'x-request-id': 'chosen-by-client' },
    })
    assert.notEqual(direct.headers['x-request-id'], 'chosen-by-client')
    assert.equal(backend.requests[0]!.headers['x-request-id'], direct.headers['x-request-id'])
    assert.equal(backend.requests[0]!.rawHeaders.filter((h) => h.toLowerCase() === 'x-request-id').length, 1)

    const proxied = await app.inject({
      method: 'GET',
      url: '/auth/settings',
      remoteAddress: '10.1.2.3',
      headers: { 'x-request-id': 'lb-7f3a', 'x-forwarded-for': '198.51.100.4' },
    })
    assert.equal(proxied.headers['x-request-id'], 'lb-7f3a')
    assert.equal(backend.requests[1]!.headers['x-request-id'], 'lb-7f3a')
    const line = logs.lines.filter((l) => l.msg === 'request').at(-1)!
    assert.equal(line.reqId, 'lb-7f3a')
    assert.equal(line.ip, '198.51.100.4')
    // Our own errors carry it too.
    const notFound = await app.inject({ method: 'GET', url: '/auth/admin/users' })
    assert.match(String(notFound.headers['x-request-id']), /^[0-9a-f-]{36}$/)
  })

  it('with the backend down, each request has its line but the error itself is logged at a bounded rate', async () => {
    const down = await buildApp({
      rateLimit: false,
      logger: { stream: logs.stream },
      config: { backendUrl: parseBackendUrl('test', 'http://127.0.0.1:9') },
    })
    try {
      const before = logs.lines.length
      for (let i = 0; i < 30; i++)
        assert.equal((await down.inject({ method: 'GET', url: '/auth/settings' })).statusCode, 502)
      const fresh = logs.lines.slice(before)
      assert.equal(fresh.filter((l) => l.msg === 'request').length, 30)
      const errors = fresh.filter((l) => l.msg === 'backend unreachable')
      assert.equal(errors.length, 1)
      assert.equal(errors[0]!.occurrences, 1)
      assert.equal(fresh.filter((l) => l.msg === 'request')[0]!.backendError, 'unreachable')
    } finally {
      await down.close()
    }
  })

  it('a probe’s line is written at debug, and only where debug is on; another request’s at its status’s level', async () => {
    for (const level of ['debug', 'info'] as const) {
      const lines = logCapture()
      const probed = await buildApp({
        rateLimit: false,
        logger: { stream: lines.stream, level },
        config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
      })
      try {
        assert.equal((await probed.inject({ method: 'GET', url: '/livez?x=1' })).statusCode, 200)
        assert.equal((await probed.inject({ method: 'GET', url: '/auth/settings' })).statusCode, 200)
        const written = lines.lines.filter((l) => l.msg === 'request').map((l) => [l.url, l.level])
        assert.deepEqual(
          written,
          level === 'debug'
            ? [
                ['/livez?x=1', 20],
                ['/auth/settings', 30],
              ]
            : [['/auth/settings', 30]],
          level,
        )
      } finally {
        await probed.close()
      }
    }
  })
})
