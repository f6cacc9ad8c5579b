import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { AuthgateConfigError } from '../../src/config.ts'
import { normaliseBackendUrl, SupabaseAuthClient } from '../../src/core/backend.ts'
import { defineRoute } from '../../src/routes-dsl/index.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'
import { ISSUER, makeKey, sign, type SigningKey } from '../protect/support.ts'

describe('one connection to Supabase Auth', () => {
  let key: SigningKey
  let backend: FakeBackend
  let app: FastifyInstance

  before(async () => {
    key = await makeKey()
    backend = await startFakeBackend((req, res) => {
      if (req.url === '/auth/v1/.well-known/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(JSON.stringify({ keys: [key.publicJwk] }))
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"id":"u1"}')
    })
    app = await buildApp({
      rateLimit: false,
      // Given from code with a trailing slash: the same backend as without it, for every part.
      config: { backendUrl: new URL(`${backend.url}/auth/v1/`), backendApiKey: 'sb_publishable_k1' },
      protect: { issuer: ISSUER, sessionCheck: true },
    })
    app.route(
      defineRoute({ method: 'GET', url: '/live', auth: { session: true }, handler: async () => ({ ok: true }) }),
    )
    await app.ready()
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  it('forwarding, readiness, the key set and the session check ask the same base path, each with the apikey', async () => {
    assert.equal((await app.inject({ method: 'GET', url: '/auth/settings' })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    const token = await sign(key)
    const live = await app.inject({ method: 'GET', url: '/live', headers: { authorization: `Bearer ${token}` } })
    assert.equal(live.statusCode, 200, live.body)

    const all = [...backend.requests, ...backend.probes]
    const seen = all.map((r) => r.target.split('?')[0])
    assert.deepEqual([...new Set(seen)].sort(), [
      '/auth/v1/.well-known/jwks.json',
      '/auth/v1/health',
      '/auth/v1/settings',
      '/auth/v1/user',
    ])
    for (const r of all) assert.equal(r.headers.apikey, 'sb_publishable_k1', `${r.target} carries the apikey`)
  })
})

describe('backend URL', () => {
  it('is normalised once: a trailing slash names the same backend', () => {
    assert.equal(normaliseBackendUrl('x', 'http://h:1/auth/v1/').href, 'http://h:1/auth/v1')
    assert.equal(normaliseBackendUrl('x', new URL('http://h:1/auth/v1//')).href, 'http://h:1/auth/v1')
    const client = new SupabaseAuthClient({
      url: 'http://h:1/auth/v1/',
      timeoutMs: 1000,
      connectTimeoutMs: 1000,
      connections: 1,
    })
    assert.equal(client.resolve('/health').href, 'http://h:1/auth/v1/health')
    void client.close()
  })

  it('bad values given from code are refused with the option named, as from the environment', async () => {
    for (const [config, option] of [
      [{ backendUrl: 'ftp://h' }, 'backendUrl'],
      [{ backendUrl: 'http://u:p@h' }, 'backendUrl'],
      [{ prefix: 'auth' }, 'prefix'],
      [{ backendTimeoutMs: -1 }, 'backendTimeoutMs'],
      [{ corsOrigins: ['https://a.example/path'] }, 'corsOrigins'],
      [{ requestIdHeader: 'bad header' }, 'requestIdHeader'],
      [{ readinessPath: '/livez' }, 'readinessPath'],
    ] as const) {
      await assert.rejects(
        buildApp({ config: config as never }),
        (err: unknown) => err instanceof AuthgateConfigError && err.option === option,
        JSON.stringify(config),
      )
    }
  })
})
