import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import { resolveSessionConfig } from '../../src/sessions/config.ts'
import { createSessionStore } from '../../src/sessions/index.ts'
import { RedisSessionStore } from '../../src/sessions/redis-store.ts'
import { logCapture } from '../support/log-capture.ts'

const unavailable = await new Promise<string | undefined>((resolve) => {
  const socket = connect(6379, '127.0.0.1')
  socket.once('connect', () => {
    socket.destroy()
    resolve(undefined)
  })
  socket.once('error', () => resolve('Redis is not listening on 127.0.0.1:6379'))
})

describe('RedisSessionStore (real Redis)', { skip: unavailable }, () => {
  let store: RedisSessionStore
  const prefix = `authgate:test-session:${process.pid}:${Date.now()}:`
  before(async () => {
    store = new RedisSessionStore({ url: 'redis://127.0.0.1:6379', keyPrefix: prefix, timeoutMs: 2000 })
    assert.equal(await store.ready(5000), true)
    assert.equal(await store.ready(5000), true)
  })
  after(async () => {
    const keys = await store.client.keys(`${prefix}*`)
    if (keys.length > 0) await store.client.del(...keys)
    await store.close()
  })

  it('stores under the prefix with a time to live; touch sets a new one; delete removes', async () => {
    await store.set('h1', 'sealed', 60_000)
    assert.equal(await store.get('h1'), 'sealed')
    assert.equal(await store.client.get(`${prefix}h1`), 'sealed')
    const ttl = await store.client.pttl(`${prefix}h1`)
    assert.ok(ttl > 0 && ttl <= 60_000, String(ttl))
    await store.touch('h1', 600_000)
    assert.ok((await store.client.pttl(`${prefix}h1`)) > 60_000)
    await store.delete('h1')
    assert.equal(await store.get('h1'), undefined)
  })

  it('the lock: one holder; only its token releases it; it expires', async () => {
    const token = await store.lock('h2', 60_000)
    assert.ok(token)
    assert.equal(await store.lock('h2', 60_000), undefined)
    await store.unlock('h2', 'someone-else')
    assert.equal(await store.lock('h2', 60_000), undefined)
    await store.unlock('h2', token)
    const short = await store.lock('h2', 1)
    assert.ok(short)
    // Expired in Redis (1 ms): taken again without a release.
    let again: string | undefined
    while (again === undefined) again = await store.lock('h2', 60_000)
    assert.ok(again)
  })

  it('renew: only the holder extends its lock; a lapsed or taken lock is not renewed', async () => {
    const token = await store.lock('h3', 1000)
    assert.ok(token)
    assert.equal(await store.renew('h3', token, 60_000), true)
    const ttl = await store.client.pttl(`${prefix}lock:h3`)
    assert.ok(ttl > 1000 && ttl <= 60_000, String(ttl))
    assert.equal(await store.renew('h3', 'someone-else', 60_000), false)
    await store.unlock('h3', token)
    assert.equal(await store.renew('h3', token, 60_000), false)
    assert.equal(await store.client.exists(`${prefix}lock:h3`), 0, 'a released lock is not brought back')
  })

  it('a store whose Redis is not there is not ready and its commands fail', async () => {
    const down = new RedisSessionStore({ url: 'redis://127.0.0.1:1', keyPrefix: 'x:', timeoutMs: 100 })
    try {
      assert.equal(await down.ready(200), false)
      await assert.rejects(down.get('h'))
    } finally {
      await down.close()
    }
  })
})

describe('the session store’s Redis connection errors in the log', () => {
  it('one line per distinct error until connected again; a refused certificate explained', async () => {
    const logs = logCapture()
    const log = pino({ level: 'warn' }, logs.stream) as unknown as FastifyBaseLogger
    const config = resolveSessionConfig({
      keys: [{ id: 'k', key: randomBytes(32) }],
      // Nothing listens on port 1: the client fails and retries on its own.
      store: { kind: 'redis', url: 'redis://127.0.0.1:1', keyPrefix: 'x:', timeoutMs: 200 },
    })
    const store = createSessionStore(config, log) as RedisSessionStore
    try {
      const lines = () => logs.lines.filter((l) => l.msg === 'cookie sessions: Redis connection error')
      const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
      for (let i = 0; i < 3; i++) store.client.emit('error', refused)
      assert.equal(
        lines().filter((l) => String((l.err as { message: string }).message).includes('ECONNREFUSED')).length,
        1,
      )
      const certificate = Object.assign(new Error('self-signed certificate in certificate chain'), {
        code: 'SELF_SIGNED_CERT_IN_CHAIN',
      })
      store.client.emit('error', certificate)
      assert.match(String((lines().at(-1)!.err as { message: string }).message), /AUTHGATE_REDIS_TLS_CA/)
      // Connected again: the same failure afterwards is logged again.
      store.client.emit('ready')
      const before = lines().length
      store.client.emit('error', certificate)
      assert.equal(lines().length, before + 1)
    } finally {
      await store.close()
    }
  })
})
