import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { LazyChildLogger, lazyChildLogger } from '../../src/observability/lazy-child-logger.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'
import { logCapture } from '../support/log-capture.ts'

describe('the request logger made on its first line', () => {
  let backend: FakeBackend
  let app: FastifyInstance
  const logs = logCapture()
  let seen: FastifyBaseLogger | undefined

  before(async () => {
    backend = await startFakeBackend()
    app = await buildApp({
      rateLimit: false,
      logger: { stream: logs.stream, level: 'warn' },
      config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
    })
    app.get('/app/quiet', async (request) => {
      seen = request.log
      return { ok: true }
    })
    app.get('/app/loud', async (request) => {
      request.log.warn({ detail: 'x' }, 'an application line')
      request.log.info('below the level')
      return { ok: true }
    })
    app.get('/app/child', async (request) => {
      request.log.child({ part: 'inner' }).error('from a child')
      return { level: request.log.level, bindings: (request.log as unknown as LazyChildLogger).bindings() }
    })
    await app.ready()
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  it('a request that writes no line gets no pino child', async () => {
    const res = await app.inject({ method: 'GET', url: '/app/quiet' })
    assert.equal(res.statusCode, 200)
    assert.ok(seen instanceof LazyChildLogger)
    assert.equal(seen.level, 'warn')
  })

  it("a line written is the pino child's: the request id bound, the level kept", async () => {
    const res = await app.inject({ method: 'GET', url: '/app/loud' })
    const id = res.headers['x-request-id']
    const lines = logs.lines.filter((l) => l.msg === 'an application line')
    assert.equal(lines.length, 1)
    assert.equal(lines[0]!.reqId, id)
    assert.equal(lines[0]!.detail, 'x')
    assert.equal(lines[0]!.level, 40)
    assert.equal(logs.lines.filter((l) => l.msg === 'below the level').length, 0)
  })

  it("the service's logger makes a request's child itself: Fastify keeps its own factory, whose children it does not check", () => {
    assert.notEqual(app.childLoggerFactory, lazyChildLogger)
    assert.ok(app.log.child({ reqId: 'r-1' }) instanceof LazyChildLogger)
    // Any other child, and a child of a pino child, is pino's.
    const other = app.log.child({ part: 'outer' })
    assert.ok(!(other instanceof LazyChildLogger))
    assert.equal(typeof (other as unknown as { flush?: unknown }).flush, 'function')
    assert.ok(!(other.child({ reqId: 'r-2' }) instanceof LazyChildLogger))
  })

  it("a line of a request's child made by the service's logger is the pino child's", () => {
    app.log.child({ reqId: 'r-3' }).error({ detail: 'y' }, 'from a lazy child')
    const line = logs.lines.find((l) => l.msg === 'from a lazy child')
    assert.ok(line)
    assert.equal(line.reqId, 'r-3')
    assert.equal(line.detail, 'y')
    assert.equal(line.level, 50)
  })

  it("a child of the request's logger carries the request id and its own bindings", async () => {
    const res = await app.inject({ method: 'GET', url: '/app/child' })
    const id = res.headers['x-request-id']
    const line = logs.lines.find((l) => l.msg === 'from a child')
    assert.ok(line)
    assert.equal(line.reqId, id)
    assert.equal(line.part, 'inner')
    assert.deepEqual(res.json(), { level: 'warn', bindings: { reqId: id } })
  })

  it("a request's logger follows the service's level as it is changed, and the request's line with it", async () => {
    const lineOf = async () => {
      const res = await app.inject({ method: 'GET', url: '/app/quiet' })
      return logs.lines.filter((l) => l.msg === 'request' && l.reqId === res.headers['x-request-id']).length
    }
    assert.equal(await lineOf(), 0)
    app.log.level = 'info'
    try {
      assert.equal(seen!.level, 'info', 'a logger with no line yet has the level the service has now')
      assert.equal(await lineOf(), 1)
      assert.equal(seen!.level, 'info')
      // A child's level changed does not change the service's.
      app.log.child({ part: 'other' }).level = 'debug'
      assert.equal(app.log.child({ reqId: 'r-4' }).level, 'info')
      app.log.level = 'error'
      assert.equal(app.log.child({ reqId: 'r-5' }).level, 'error')
      assert.equal(await lineOf(), 0)
    } finally {
      app.log.level = 'warn'
    }
    assert.equal(await lineOf(), 0)
    assert.equal(seen!.level, 'warn')
  })
})
