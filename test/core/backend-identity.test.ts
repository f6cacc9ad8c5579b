import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, beforeEach, describe, it } from 'node:test'
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import { buildApp } from '../../src/app.ts'
import { backendOptions, loadCoreConfig, parseBackendUrl } from '../../src/config.ts'
import { SupabaseAuthClient } from '../../src/core/backend.ts'
import { runChecks } from '../../src/doctor/checks.ts'
import { createTokenVerifier } from '../../src/protect/verify.ts'
import { resolveSessionConfig } from '../../src/sessions/config.ts'
import { CookieSessions } from '../../src/sessions/manager.ts'
import { MemorySessionStore } from '../../src/sessions/memory-store.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { startFakeBackend, type FakeBackend, type Recorded } from '../support/fake-backend.ts'

/**
 * Every kind of request authgate sends to Supabase Auth carries the same identity, from one
 * function (`SupabaseAuthClient.identityHeaders`): the client IP in X-Forwarded-For and in the
 * configured client-IP header (what Supabase Auth limits by), the request id, the `apikey`.
 */

const ENV = {
  AUTHGATE_CLIENT_IP_HEADER: 'Sb-Forwarded-For',
  AUTHGATE_REQUEST_ID_HEADER: 'X-Trace-Id',
  AUTHGATE_BACKEND_APIKEY: 'sb_publishable_identity',
}
const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger

const SESSION = (n: number) =>
  JSON.stringify({ access_token: `a${n}`, refresh_token: `r${n}`, expires_in: 3600, user: { id: 'u1' } })

describe('one backend identity for every backend request', () => {
  let fake: FakeBackend
  let config: ReturnType<typeof loadCoreConfig>
  let client: SupabaseAuthClient

  before(async () => {
    fake = await startFakeBackend()
    config = loadCoreConfig({ ...ENV, AUTHGATE_BACKEND_URL: fake.url })
    client = new SupabaseAuthClient(backendOptions(config, 2))
  })
  after(async () => {
    await client.close()
    await fake.close()
  })
  beforeEach(() => {
    fake.requests.length = 0
    fake.handler = (req, res) => {
      const path = (req.url ?? '').split('?')[0]
      if (path === '/otp') return void res.writeHead(429, { 'content-type': 'application/json' }).end('{}')
      if (path === '/.well-known/jwks.json')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[]}')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(path === '/token' ? SESSION(2) : '{"id":"u1"}')
    }
  })

  /** The client's address in both headers, the id and the key. */
  const assertIdentity = (r: Recorded, ip: string, requestId?: string) => {
    assert.equal(r.headers['x-forwarded-for'], ip, `${r.target}: x-forwarded-for`)
    assert.equal(r.headers['sb-forwarded-for'], ip, `${r.target}: the configured client-IP header`)
    assert.equal(r.headers.apikey, ENV.AUTHGATE_BACKEND_APIKEY, `${r.target}: apikey`)
    if (requestId !== undefined) assert.equal(r.headers['x-trace-id'], requestId, `${r.target}: request id`)
  }

  it('the one client is built from the configuration', () => {
    assert.equal(client.url.origin, new URL(fake.url).origin)
    assert.deepEqual(client.identityHeaders({ clientIp: '192.0.2.1', requestId: 'r1' }), [
      'x-forwarded-for',
      '192.0.2.1',
      'sb-forwarded-for',
      '192.0.2.1',
      'x-trace-id',
      'r1',
      'apikey',
      ENV.AUTHGATE_BACKEND_APIKEY,
    ])
  })

  it('a forwarded request, the client’s own copies replaced', async () => {
    const app = await buildApp({ rateLimit: false, config: { ...config, backendUrl: parseBackendUrl('t', fake.url) } })
    try {
      const res = await app.inject({
        method: 'GET',
        url: '/auth/settings',
        remoteAddress: '198.51.100.7',
        headers: { 'sb-forwarded-for': '192.0.2.66', apikey: 'theirs', 'x-trace-id': 'theirs' },
      })
      assert.equal(res.statusCode, 200)
      assertIdentity(fake.requests.at(-1)!, '198.51.100.7', res.headers['x-trace-id'] as string)
      assert.notEqual(res.headers['x-trace-id'], 'theirs')
    } finally {
      await app.close()
    }
  })

  it('cookie sessions’ refresh and the user of a new session', async () => {
    let now = 1_700_000_000_000
    const sessions = new CookieSessions({
      config: resolveSessionConfig({ keys: [{ id: 'k', key: randomBytes(32) }] }),
      store: new MemorySessionStore({ now: () => now }),
      backend: client,
      log,
      now: () => now,
    })
    const created = await sessions.create({
      accessToken: 'a1',
      refreshToken: 'r1',
      expiresAt: Math.floor(now / 1000) + 60,
      user: null,
    })
    now += 59_000
    const context = { clientIp: '203.0.113.9', requestId: 'req-refresh' }
    assert.equal((await sessions.use(created.id, context))?.session.refreshToken, 'r2')
    await sessions.userOf('a2', { clientIp: '203.0.113.10', requestId: 'req-user' })
    const [refresh, user] = fake.requests
    assert.equal(refresh!.target, '/token?grant_type=refresh_token')
    assertIdentity(refresh!, '203.0.113.9', 'req-refresh')
    assert.equal(user!.target, '/user')
    assertIdentity(user!, '203.0.113.10', 'req-user')
  })

  it('the doctor’s client-IP probe', async () => {
    await runChecks({
      config,
      rateLimit: loadRateLimitSettings({}),
      publicUrl: undefined,
      backend: client,
      probe: true,
    })
    const probes = fake.requests.filter((r) => r.target === '/otp')
    assert.ok(probes.length >= 2, 'the probe sent from two addresses')
    for (const p of probes) assertIdentity(p, p.headers['x-forwarded-for'] as string)
    assert.match(String(probes[0]!.headers['sb-forwarded-for']), /^198\.(18|19)\./)
  })

  it('the key set: the apikey; no client IP, since no client asked for it', async () => {
    const verifier = createTokenVerifier({ issuer: 'http://localhost/auth', backend: client })
    assert.equal(await verifier.jwks!.load(), true)
    const keys = fake.requests.find((r) => r.target === '/.well-known/jwks.json')!
    assert.equal(keys.headers.apikey, ENV.AUTHGATE_BACKEND_APIKEY)
    // Never one of the two client-IP headers without the other.
    assert.equal(keys.headers['x-forwarded-for'], undefined)
    assert.equal(keys.headers['sb-forwarded-for'], undefined)
  })
})
