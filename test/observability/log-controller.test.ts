import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { startFakeBackend } from '../support/fake-backend.ts'
import { logCapture } from '../support/log-capture.ts'

/** The value of one sample line of the scrape. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return undefined
}

// With a logger, the request metrics and the request's line are written from the log controller
// when each response is finished (no `onResponse` hook): every answer is still counted once and
// logged once, those Fastify sends, those the relay writes, and a route nobody serves.
for (const logger of [false, true]) {
  test(`each answer is counted once and logged once (logger ${logger ? 'on' : 'off'})`, async () => {
    const backend = await startFakeBackend((req, res) => {
      res.writeHead(req.url?.startsWith('/token') ? 400 : 200, { 'content-type': 'application/json' })
      res.end('{}')
    })
    const logs = logCapture()
    const app = await buildApp({
      rateLimit: false,
      ...(logger ? { logger: { stream: logs.stream, level: 'info' } } : {}),
      config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
    })
    try {
      await app.ready()
      for (let i = 0; i < 2; i++) await app.inject({ method: 'GET', url: '/auth/settings' })
      await app.inject({
        method: 'POST',
        url: '/auth/token?grant_type=password',
        headers: { 'content-type': 'application/json' },
        payload: '{"email":"a@b.co","password":"x"}',
      })
      await app.inject({ method: 'GET', url: '/auth/nothing' })
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body
      const count = (labels: Record<string, string>) => sample(text, 'authgate_http_requests_total', labels)
      assert.equal(count({ route: '/auth/settings', method: 'GET', status: '200' }), 2)
      assert.equal(count({ route: '/auth/token', method: 'POST', status: '400' }), 1)
      assert.equal(count({ route: '', method: 'GET', status: '404' }), 1)
      if (logger) {
        const lines = logs.lines.filter((l) => l['msg'] === 'request' && l['url'] !== '/metrics')
        assert.deepEqual(
          lines.map((l) => `${String(l['method'])} ${String(l['url'])} ${String(l['status'])}`),
          [
            'GET /auth/settings 200',
            'GET /auth/settings 200',
            'POST /auth/token?grant_type=password 400',
            'GET /auth/nothing 404',
          ],
        )
      }
    } finally {
      await app.close()
      await backend.close()
    }
  })
}
