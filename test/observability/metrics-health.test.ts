import { networkInterfaces } from 'node:os'
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { AuthgateConfigError, parseBackendUrl } from '../../src/config.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'

/** The value of one sample line, e.g. `authgate_http_requests_total{route="/auth/settings",method="GET",status="200"}`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue
    const ok = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))
    if (ok) return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return undefined
}

describe('metrics after a mixed run', () => {
  let backend: FakeBackend
  let app: FastifyInstance

  before(async () => {
    backend = await startFakeBackend((req, res) => {
      if (req.url?.startsWith('/slow')) {
        setTimeout(() => res.writeHead(200).end('{}'), 1500)
        return
      }
      res.writeHead(req.url?.startsWith('/token') ? 400 : 200, { 'content-type': 'application/json' })
      res.end('{}')
    })
    app = await buildApp({
      rateLimit: { ...loadRateLimitSettings({ AUTHGATE_RATE_LIMIT: '2/1m' }) },
      // Every request reaches the fake backend: no answer from the response cache.
      config: { backendUrl: parseBackendUrl('test', backend.url), backendTimeoutMs: 300, cacheTtlMs: 0 },
    })
    await app.ready()
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  it('counts requests by template, method and status, backend latency and errors, and rate-limit decisions', async () => {
    const json = { 'content-type': 'application/json' }
    for (let i = 0; i < 3; i++) await app.inject({ method: 'GET', url: '/auth/settings' })
    for (let i = 0; i < 3; i++)
      await app.inject({
        method: 'POST',
        url: '/auth/token?grant_type=password',
        headers: json,
        payload: '{"email":"a@b.co","password":"x"}',
      })
    await app.inject({ method: 'DELETE', url: '/auth/passkeys/one', headers: { authorization: 'Bearer t' } })
    await app.inject({ method: 'DELETE', url: '/auth/passkeys/two', headers: { authorization: 'Bearer t' } })
    await app.inject({ method: 'GET', url: '/auth/nothing' })
    // Backend too slow: a 504 and a timeout. undici checks its headers timeout on a coarse clock
    // (ticks of about half a second), so the 300 ms timeout can fire well after 1 s: the answer
    // comes far later than that.
    backend.handler = (_req, res) => void setTimeout(() => res.writeHead(200).end('{}'), 5000).unref()
    assert.equal((await app.inject({ method: 'GET', url: '/auth/health' })).statusCode, 504)

    const res = await app.inject({ method: 'GET', url: '/metrics' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/)
    const text = res.body
    assert.equal(
      sample(text, 'authgate_http_requests_total', { route: '/auth/settings', method: 'GET', status: '200' }),
      3,
    )
    assert.equal(
      sample(text, 'authgate_http_requests_total', { route: '/auth/token', method: 'POST', status: '400' }),
      2,
    )
    assert.equal(
      sample(text, 'authgate_http_requests_total', { route: '/auth/token', method: 'POST', status: '429' }),
      1,
    )
    assert.equal(
      sample(text, 'authgate_http_requests_total', { route: '/auth/passkeys/:id', method: 'DELETE', status: '200' }),
      2,
    )
    assert.equal(sample(text, 'authgate_http_requests_total', { route: '', method: 'GET', status: '404' }), 1)
    assert.equal(sample(text, 'authgate_http_requests_total', { route: '/auth/health', status: '504' }), 1)
    assert.equal(
      sample(text, 'authgate_backend_request_duration_seconds_count', { route: '/auth/settings', status: '200' }),
      3,
    )
    assert.equal(
      sample(text, 'authgate_backend_request_duration_seconds_count', { route: '/auth/token', status: '400' }),
      2,
    )
    assert.equal(sample(text, 'authgate_backend_errors_total', { kind: 'timeout' }), 1)
    assert.equal(sample(text, 'authgate_backend_errors_total', { kind: 'unreachable' }), 0)
    // Two sign-ins let through, each by two decisions: per client IP and per account.
    assert.equal(sample(text, 'authgate_rate_limit_decisions_total', { decision: 'allowed' }), 4)
    assert.equal(sample(text, 'authgate_rate_limit_decisions_total', { decision: 'denied' }), 1)
    assert.equal(sample(text, 'authgate_rate_limit_denied_total', { limit: 'client', route: 'POST /token' }), 1)
    assert.ok(sample(text, 'authgate_http_request_duration_seconds_count', { route: '/auth/settings' }) === 3)
    // A second scrape does not double the limiter's counts.
    const again = (await app.inject({ method: 'GET', url: '/metrics' })).body
    assert.equal(sample(again, 'authgate_rate_limit_decisions_total', { decision: 'allowed' }), 4)
    assert.equal(sample(again, 'authgate_redis_up'), undefined, 'no Redis configured')
  })
})

describe('liveness and readiness', () => {
  it('readiness turns false first on shutdown', async () => {
    const backend = await startFakeBackend()
    const app = await buildApp({ rateLimit: false, config: { backendUrl: parseBackendUrl('test', backend.url) } })
    try {
      await app.ready()
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
      app.authgateService.readiness.drain()
      const res = await app.inject({ method: 'GET', url: '/readyz' })
      assert.equal(res.statusCode, 503)
      assert.equal(res.json().shutdown, 'draining')
      assert.equal((await app.inject({ method: 'GET', url: '/livez' })).statusCode, 200)
    } finally {
      await app.close()
      await backend.close()
    }
  })

  it('the backend probe carries the configured apikey (hosted Supabase answers 401 without one)', async () => {
    const backend = await startFakeBackend((req, res) =>
      res.writeHead(req.headers.apikey === 'k1' ? 200 : 401).end('{}'),
    )
    const app = await buildApp({
      rateLimit: false,
      config: { backendUrl: parseBackendUrl('test', backend.url + '/auth/v1'), backendApiKey: 'k1' },
    })
    try {
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
      assert.equal(backend.probes.at(-1)!.target, '/auth/v1/health')
      assert.equal(backend.probes.at(-1)!.headers.apikey, 'k1')
    } finally {
      await app.close()
      await backend.close()
    }
  })

  it('a health, metrics or docs path that clashes with a route is a configuration error naming the variable', async () => {
    await assert.rejects(
      buildApp({ rateLimit: false, config: { readinessPath: '/auth/settings' } }),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === 'AUTHGATE_READINESS_PATH',
    )
    await assert.rejects(
      buildApp({ rateLimit: false, openapi: { docsPath: '/auth/health' } }),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === 'AUTHGATE_DOCS_PATH',
    )
    await assert.rejects(
      buildApp({ rateLimit: false, openapi: { docsPath: '/metrics' } }),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === 'AUTHGATE_DOCS_PATH',
    )
  })

  it('the metrics port binds loopback unless AUTHGATE_METRICS_HOST says otherwise', async () => {
    const app = await buildApp({ rateLimit: false, config: { metricsPort: 0 } })
    try {
      await app.listen({ port: 0, host: '127.0.0.1' })
      const port = app.authgateService.metricsPort()!
      // Another address of this host: on Linux all of 127/8 reaches it, yet a listener on 127.0.0.1
      // answers on 127.0.0.1 alone; elsewhere an interface's own address.
      const other =
        process.platform === 'linux'
          ? '127.0.0.2'
          : Object.values(networkInterfaces())
              .flat()
              .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address
      if (other !== undefined)
        await assert.rejects(fetch(`http://${other}:${port}/metrics`), 'not reachable on another address')
      assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 200)
    } finally {
      await app.close()
    }
    const { loadCoreConfig } = await import('../../src/config.ts')
    assert.equal(loadCoreConfig({}).metricsHost, '127.0.0.1')
    assert.equal(loadCoreConfig({ AUTHGATE_METRICS_HOST: '0.0.0.0' }).metricsHost, '0.0.0.0')
  })

  it('metrics on their own port are not on the public one', async () => {
    const app = await buildApp({ rateLimit: false, config: { metricsPort: 0, host: '127.0.0.1' } })
    try {
      await app.listen({ port: 0, host: '127.0.0.1' })
      assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)
      const port = app.authgateService.metricsPort()
      const res = await fetch(`http://127.0.0.1:${port}/metrics`)
      assert.equal(res.status, 200)
      assert.match(await res.text(), /authgate_http_requests_total/)
    } finally {
      await app.close()
    }
  })
})
