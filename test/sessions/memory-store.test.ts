import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MemorySessionStore } from '../../src/sessions/memory-store.ts'

describe('MemorySessionStore', () => {
  it('forgets a record at its time to live; touch extends it', async () => {
    let now = 1000
    const store = new MemorySessionStore({ now: () => now })
    await store.set('h', 'sealed', 100)
    assert.equal(await store.get('h'), 'sealed')
    now = 1090
    await store.touch('h', 100)
    now = 1150
    assert.equal(await store.get('h'), 'sealed')
    now = 1190
    assert.equal(await store.get('h'), undefined)
    assert.equal(store.size, 0)
    await store.touch('absent', 10)
  })

  it('deletes, and drops the oldest past its bound', async () => {
    const store = new MemorySessionStore({ maxEntries: 2 })
    await store.set('a', '1', 60_000)
    await store.set('b', '2', 60_000)
    await store.set('c', '3', 60_000)
    assert.equal(await store.get('a'), undefined)
    assert.equal(await store.get('c'), '3')
    await store.delete('c')
    assert.equal(await store.get('c'), undefined)
    assert.equal(await store.ready(), true)
    await store.close()
    assert.equal(await store.get('b'), undefined)
  })

  it('the refresh lock: one holder until released or expired; only the holder releases', async () => {
    let now = 0
    const store = new MemorySessionStore({ now: () => now })
    const first = await store.lock('h', 100)
    assert.ok(first)
    assert.equal(await store.lock('h', 100), undefined)
    await store.unlock('h', 'not-the-token')
    assert.equal(await store.lock('h', 100), undefined)
    await store.unlock('h', first)
    const second = await store.lock('h', 100)
    assert.ok(second)
    now = 200
    assert.ok(await store.lock('h', 100), 'an expired lock is taken again')
  })

  it('renew: only the holder extends its lock, and only while it holds it', async () => {
    let now = 0
    const store = new MemorySessionStore({ now: () => now })
    const token = (await store.lock('h', 100))!
    now = 90
    assert.equal(await store.renew('h', token, 100), true)
    now = 150
    assert.equal(await store.lock('h', 100), undefined, 'renewed until 190')
    assert.equal(await store.renew('h', 'not-the-token', 100), false)
    now = 200
    assert.equal(await store.renew('h', token, 100), false, 'lapsed at 190')
    assert.equal(await store.renew('other', token, 100), false)
  })
})
