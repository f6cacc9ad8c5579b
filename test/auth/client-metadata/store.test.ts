import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import {
  MemoryClientIdStore,
  RedisClientIdStore,
  type ClientIdStore,
  type ClientRecord,
} from '../../../src/auth/client-metadata/store.ts'

const unavailable = await new Promise<string | undefined>((resolve) => {
  const socket = connect(6379, '127.0.0.1')
  socket.once('connect', () => {
    socket.destroy()
    resolve(undefined)
  })
  socket.once('error', () => resolve('needs Redis listening on 127.0.0.1:6379'))
})

const URL_ = 'https://app.example.com/mcp.json'
const A: ClientRecord = { id: '00000000-0000-4000-8000-00000000000a', redirectUris: ['https://a/cb'], clientName: 'A' }
const B: ClientRecord = {
  id: '00000000-0000-4000-8000-00000000000b',
  redirectUris: ['https://b/cb'],
  clientName: undefined,
}
const C: ClientRecord = { id: '00000000-0000-4000-8000-00000000000c', redirectUris: ['https://c/cb'], clientName: 'C' }

/** The compare-and-set every store keeps: what two replicas registering at once agree on. */
async function compareAndSet(store: ClientIdStore) {
  assert.equal(await store.byUrl(URL_), undefined)
  assert.deepEqual(await store.replace(URL_, undefined, A), A)
  // A second replica that also read "none" loses: the first record stands.
  assert.deepEqual(await store.replace(URL_, undefined, B), A)
  assert.deepEqual(await store.byUrl(URL_), A)
  // A change over the record read replaces it; the old id still names the URL.
  assert.deepEqual(await store.replace(URL_, A, C), C)
  assert.deepEqual(await store.replace(URL_, A, B), C, 'a stale read does not overwrite')
  assert.equal(await store.urlOf(A.id), URL_)
  assert.equal(await store.urlOf(C.id), URL_)
  assert.equal(await store.urlOf(B.id), undefined)
}

it('memory: compare-and-set by the record read', () => compareAndSet(new MemoryClientIdStore()))

describe('Redis (real): compare-and-set, kept for every replica and across restarts', { skip: unavailable }, () => {
  const keyPrefix = `authgate:test-cimd:${process.pid}:${Date.now()}:`
  const settings = { url: 'redis://127.0.0.1:6379', keyPrefix, timeoutMs: 2000 }
  let store: RedisClientIdStore
  before(async () => {
    store = new RedisClientIdStore(settings)
    assert.equal(await store.ready(5000), true)
  })
  after(async () => {
    const keys = await store.client.keys(`${keyPrefix}*`)
    if (keys.length > 0) await store.client.del(...keys)
    await store.close()
  })

  it('agrees with the memory store, and another connection (a replica, a restart) reads the same', async () => {
    await compareAndSet(store)
    const other = new RedisClientIdStore(settings)
    try {
      assert.equal(await other.ready(5000), true)
      assert.deepEqual(await other.byUrl(URL_), C)
      assert.equal(await other.urlOf(A.id), URL_)
    } finally {
      await other.close()
    }
  })
})
