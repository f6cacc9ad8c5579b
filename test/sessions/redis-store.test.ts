import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { RedisSessionStore } from '../../src/sessions/redis-store.ts'

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
