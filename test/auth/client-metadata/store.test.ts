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
  // The client the change replaced is refused from now on; the others are not.
  assert.equal(await store.isReplaced(A.id), true)
  assert.equal(await store.isReplaced(C.id), false)
  assert.equal(await store.isReplaced(B.id), false)
}

/** The registration quota: so many per document origin, so many in all, per window. */
async function quota(store: ClientIdStore) {
  const taken = []
  for (const origin of ['https://a.example', 'https://a.example', 'https://a.example', 'https://b.example'])
    taken.push(await store.admitRegistration(origin))
  taken.push(await store.admitRegistration('https://c.example'))
  assert.deepEqual(taken, [true, true, false, true, false], 'two per origin, three in all')
}
const QUOTA = { perOrigin: 2, total: 3, windowMs: 3_600_000 }

it('memory: compare-and-set by the record read', () => compareAndSet(new MemoryClientIdStore()))

it('memory: the quota, expiry of unused mappings (each use extends it), and a bound on what it holds', async () => {
  const clock = { now: 1_000_000 }
  const lifetimes = { unusedMs: 10_000, replacedMs: 100_000 }
  await quota(new MemoryClientIdStore({ quota: QUOTA, now: () => clock.now }))
  const again = new MemoryClientIdStore({ quota: QUOTA, now: () => clock.now })
  for (let i = 0; i < 3; i++) await again.admitRegistration(`https://${i}.example`)
  clock.now += QUOTA.windowMs
  assert.equal(await again.admitRegistration('https://a.example'), true, 'a new window')

  const store = new MemoryClientIdStore({ lifetimes, maxEntries: 3, now: () => clock.now })
  await store.replace(URL_, undefined, A)
  clock.now += 9_000
  assert.deepEqual(await store.byUrl(URL_), A, 'used: kept another 10 s')
  clock.now += 9_000
  assert.equal(await store.urlOf(A.id), URL_)
  assert.deepEqual(await store.byUrl(URL_), A)
  clock.now += 10_000
  assert.equal(await store.byUrl(URL_), undefined, 'unused for its lifetime: forgotten')
  assert.equal(await store.urlOf(A.id), undefined)

  await store.replace(URL_, undefined, A)
  await store.replace(URL_, A, C)
  clock.now += 50_000
  assert.equal(await store.isReplaced(A.id), true, 'a replaced client is refused longer than a mapping lives')
  for (let i = 0; i < 10; i++)
    await store.replace(`https://app.example.com/${i}.json`, undefined, { ...B, id: `id-${i}` })
  assert.equal(store.size, 3, 'the least recently used mappings went first')
})

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

  it('the quota, and keys that expire unless used', async () => {
    const limited = new RedisClientIdStore(
      { ...settings, keyPrefix: `${keyPrefix}quota:` },
      { quota: QUOTA, lifetimes: { unusedMs: 86_400_000, replacedMs: 365 * 86_400_000 } },
    )
    try {
      assert.equal(await limited.ready(5000), true)
      await quota(limited)
      const url = 'https://app.example.com/expiring.json'
      await limited.replace(url, undefined, A)
      const prefix = `${keyPrefix}quota:client-metadata:{clients}:`
      const ttl = (key: string) => limited.client.pttl(`${prefix}${key}`)
      for (const key of [`url:${url}`, `id:${A.id}`]) {
        const left = await ttl(key)
        assert.ok(left > 86_000_000 && left <= 86_400_000, `${key} expires in a day (${left} ms)`)
        await limited.client.pexpire(`${prefix}${key}`, 60_000)
      }
      await limited.byUrl(url)
      for (const key of [`url:${url}`, `id:${A.id}`])
        assert.ok((await ttl(key)) > 86_000_000, `${key}: a use keeps it another day`)
      await limited.replace(url, A, C)
      assert.ok((await ttl(`gone:${A.id}`)) > 364 * 86_400_000, 'the replaced client is refused for a year')
    } finally {
      const keys = await limited.client.keys(`${keyPrefix}quota:*`)
      if (keys.length > 0) await limited.client.del(...keys)
      await limited.close()
    }
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
