/**
 * Readiness is this instance's, not its dependencies' (docs/decisions.md, D24): Supabase Auth or
 * Redis down is reported in the body, the metrics and the logs, and turns readiness false only with
 * AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES.
 */
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { loadCoreConfig, parseBackendUrl } from '../../src/config.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { ISSUER, makeKey } from '../protect/support.ts'
import { redisServerSkipReason, ThrowawayRedis, uniquePrefix } from '../ratelimit/support/redis.ts'
import { logCapture } from '../support/log-capture.ts'

function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return undefined
}

/** A backend whose /health answers while `up` is true and is refused (connection closed) otherwise. */
async function switchableBackend(
  handler?: (url: string, res: import('node:http').ServerResponse) => void,
): Promise<{ url: string; up: boolean; server: Server; close(): Promise<void> }> {
  const state = {
    url: '',
    up: true,
    server: undefined as unknown as Server,
    close: () =>
      new Promise<void>((resolve) => {
        state.server.closeAllConnections()
        state.server.close(() => resolve())
      }),
  }
  state.server = createServer((req, res) => {
    if (!state.up) {
      req.socket.destroy()
      return
    }
    if (handler) return handler(req.url ?? '', res)
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve))
  const address = state.server.address() as { port: number }
  state.url = `http://127.0.0.1:${address.port}`
  return state
}

const readyz = async (app: FastifyInstance) => {
  const res = await app.inject({ method: 'GET', url: '/readyz' })
  return { status: res.statusCode, body: res.json() as Record<string, unknown> }
}
const metricsText = async (app: FastifyInstance) => (await app.inject({ method: 'GET', url: '/metrics' })).body

describe('readiness does not follow dependencies by default', () => {
  it('Supabase Auth down: ready, reported in the body, the metric and the log; up again likewise', async () => {
    const backend = await switchableBackend()
    const logs = logCapture()
    const app = await buildApp({
      rateLimit: false,
      logger: { stream: logs.stream },
      config: { backendUrl: parseBackendUrl('test', backend.url) },
    })
    try {
      await app.ready()
      assert.deepEqual(await readyz(app), { status: 200, body: { status: 'ready', backend: 'up' } })
      assert.equal(sample(await metricsText(app), 'authgate_dependency_up', { dependency: 'supabase_auth' }), 1)

      backend.up = false
      await sleep(1100) // the probe result is reused for 1 s
      assert.deepEqual(await readyz(app), { status: 200, body: { status: 'ready', backend: 'down' } })
      assert.equal(sample(await metricsText(app), 'authgate_dependency_up', { dependency: 'supabase_auth' }), 0)
      assert.equal((await app.inject({ method: 'GET', url: '/livez' })).statusCode, 200)
      const down = logs.lines.filter((l) => l.msg === 'dependency down')
      assert.equal(down.length, 1, 'logged once, on the change')
      assert.equal(down[0]!.dependency, 'supabase_auth')
      assert.equal(down[0]!.level, 40)

      backend.up = true
      await sleep(1100)
      assert.deepEqual(await readyz(app), { status: 200, body: { status: 'ready', backend: 'up' } })
      assert.equal(sample(await metricsText(app), 'authgate_dependency_up', { dependency: 'supabase_auth' }), 1)
      const upAgain = logs.lines.filter((l) => l.msg === 'dependency up again')
      assert.equal(upAgain.length, 1)
      assert.equal(upAgain[0]!.dependency, 'supabase_auth')
    } finally {
      await app.close()
      await backend.close()
    }
  })

  it('with AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES=true, Supabase Auth down makes it 503', async () => {
    const config = loadCoreConfig({ AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES: 'true' })
    assert.equal(config.readinessFollowsDependencies, true)
    assert.equal(loadCoreConfig({}).readinessFollowsDependencies, false)
    assert.throws(() => loadCoreConfig({ AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES: 'maybe' }), /expected true or false/)

    const backend = await switchableBackend()
    const app = await buildApp({
      rateLimit: false,
      config: { backendUrl: parseBackendUrl('test', backend.url), readinessFollowsDependencies: true },
    })
    try {
      assert.equal((await readyz(app)).status, 200)
      backend.up = false
      await sleep(1100)
      assert.deepEqual(await readyz(app), { status: 503, body: { status: 'not ready', backend: 'down' } })
      backend.up = true
      await sleep(1100)
      assert.equal((await readyz(app)).status, 200)
    } finally {
      await app.close()
      await backend.close()
    }
  })

  it('draining is not ready whatever the dependencies', async () => {
    const backend = await switchableBackend()
    const app = await buildApp({ rateLimit: false, config: { backendUrl: parseBackendUrl('test', backend.url) } })
    try {
      assert.equal((await readyz(app)).status, 200)
      app.authgateService.readiness.drain()
      assert.deepEqual(await readyz(app), {
        status: 503,
        body: { status: 'not ready', backend: 'up', shutdown: 'draining' },
      })
    } finally {
      await app.close()
      await backend.close()
    }
  })

  it('with protection on, not ready until the first key-set fetch; then ready even while the backend is down', async () => {
    const key = await makeKey()
    let serveKeys = false
    const backend = await switchableBackend((url, res) => {
      if (url === '/.well-known/jwks.json' && !serveKeys) return void res.writeHead(503).end('{}')
      if (url === '/.well-known/jwks.json')
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ keys: [key.publicJwk] }))
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
    const app = await buildApp({
      rateLimit: false,
      config: { backendUrl: parseBackendUrl('test', backend.url) },
      protect: { issuer: ISSUER },
    })
    try {
      assert.deepEqual(await readyz(app), {
        status: 503,
        body: { status: 'not ready', backend: 'up', waiting: ['signing_keys'] },
      })
      serveKeys = true
      assert.deepEqual(await readyz(app), { status: 200, body: { status: 'ready', backend: 'up' } })
      backend.up = false
      await sleep(1100)
      assert.deepEqual(await readyz(app), { status: 200, body: { status: 'ready', backend: 'down' } })
    } finally {
      await app.close()
      await backend.close()
    }
  })
})

describe('readiness and the rate-limit Redis', { skip: redisServerSkipReason() }, () => {
  it('Redis down in fail-open mode: ready with redis down (and 503 when following dependencies)', async () => {
    const redis = await ThrowawayRedis.start()
    const backend = await switchableBackend()
    const logs = logCapture()
    const rateLimit = loadRateLimitSettings({
      AUTHGATE_REDIS_URL: redis.url,
      AUTHGATE_REDIS_KEY_PREFIX: uniquePrefix('readiness'),
    })
    const build = (follow: boolean) =>
      buildApp({
        rateLimit,
        logger: { stream: logs.stream },
        config: { backendUrl: parseBackendUrl('test', backend.url), readinessFollowsDependencies: follow },
      })
    const app = await build(false)
    const following = await build(true)
    try {
      await app.ready()
      await following.ready()
      assert.deepEqual(await readyz(app), { status: 200, body: { status: 'ready', backend: 'up', redis: 'up' } })
      assert.equal(sample(await metricsText(app), 'authgate_dependency_up', { dependency: 'redis' }), 1)

      await redis.stop()
      const deadline = performance.now() + 10_000
      while ((await readyz(app)).body.redis !== 'down' && performance.now() < deadline) await sleep(50)
      assert.deepEqual(await readyz(app), { status: 200, body: { status: 'ready', backend: 'up', redis: 'down' } })
      assert.equal((await readyz(following)).status, 503)
      assert.equal(sample(await metricsText(app), 'authgate_dependency_up', { dependency: 'redis' }), 0)
      assert.ok(logs.lines.some((l) => l.msg === 'dependency down' && l.dependency === 'redis'))

      await redis.restart()
      while ((await readyz(app)).body.redis !== 'up' && performance.now() < deadline + 10_000) await sleep(50)
      assert.deepEqual(await readyz(app), { status: 200, body: { status: 'ready', backend: 'up', redis: 'up' } })
      assert.ok(logs.lines.some((l) => l.msg === 'dependency up again' && l.dependency === 'redis'))
    } finally {
      await app.close()
      await following.close()
      await backend.close()
      await redis.remove()
    }
  })
})
