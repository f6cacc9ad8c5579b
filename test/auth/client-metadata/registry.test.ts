import assert from 'node:assert/strict'
import { test } from 'node:test'
import pino from 'pino'
import { DocumentFetchError, type FetchedDocument } from '../../../src/auth/client-metadata/fetch.ts'
import { ClientMetadataRegistry } from '../../../src/auth/client-metadata/registry.ts'
import { MemoryClientIdStore } from '../../../src/auth/client-metadata/store.ts'

const URL_ = 'https://app.example.com/mcp.json'
const log = pino({ level: 'silent' })

/** A registry over a document source and a registration route of the test's own. */
function setup(
  options: { origins?: 'any' | string[]; registerStatus?: number; store?: MemoryClientIdStore; maxUrls?: number } = {},
) {
  const clock = { now: 1_000_000 }
  const docs = new Map<string, () => FetchedDocument>()
  const fetched: string[] = []
  const registered: Array<Record<string, unknown>> = []
  const store = options.store ?? new MemoryClientIdStore()
  const registry = new ClientMetadataRegistry({
    ...(options.maxUrls !== undefined ? { maxUrls: options.maxUrls } : {}),
    origins: options.origins ?? 'any',
    fetcher: {
      fetch: async (url: string) => {
        fetched.push(url)
        const doc = docs.get(url)
        if (doc === undefined) throw new DocumentFetchError("the document's server answered 404, not 200")
        return doc()
      },
      close: async () => {},
    },
    store,
    backend: {
      resolve: (path) => new URL(`http://backend.test${path}`),
      fetch: async (url, init) => {
        assert.equal(String(url), 'http://backend.test/oauth/clients/register')
        const body = JSON.parse(init!.body!) as Record<string, unknown>
        registered.push(body)
        const status = options.registerStatus ?? 201
        const text =
          status === 201
            ? JSON.stringify({ client_id: `00000000-0000-4000-8000-00000000000${registered.length}` })
            : JSON.stringify({ code: status, msg: 'nope' })
        return { status, text: async () => text } as never
      },
    },
    defaultFreshMs: 300_000,
    maxFreshMs: 3_600_000,
    now: () => clock.now,
  })
  const serve = (redirectUris: string[], freshMs?: number, name = 'App') =>
    docs.set(URL_, () => ({ body: { client_id: URL_, client_name: name, redirect_uris: redirectUris }, freshMs }))
  return { clock, docs, fetched, registered, store, registry, serve }
}

test('one backend client per document: registered once, public, with its redirect URIs and name', async () => {
  const { registry, registered, serve } = setup()
  serve(['https://app.example.com/cb'])
  const [a, b] = await Promise.all([registry.resolve(URL_, log), registry.resolve(URL_, log)])
  assert.equal(a.ok && a.id, '00000000-0000-4000-8000-000000000001')
  assert.deepEqual(b, a, 'concurrent resolutions share one registration')
  assert.deepEqual(registered, [
    {
      client_name: 'App',
      redirect_uris: ['https://app.example.com/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ])
  assert.equal(await registry.urlOf('00000000-0000-4000-8000-000000000001'), URL_)
  assert.equal(await registry.urlOf('00000000-0000-4000-8000-000000000009'), undefined)
})

test('the document is reused while fresh, fetched again after; the token endpoint reads the mapping alone', async () => {
  const { registry, fetched, serve, clock } = setup()
  serve(['https://app.example.com/cb'], 60_000)
  await registry.resolve(URL_, log)
  await registry.resolve(URL_, log)
  assert.equal(fetched.length, 1)
  clock.now += 60_001
  await registry.resolve(URL_, log)
  assert.equal(fetched.length, 2)
  const id = await registry.idOf(URL_, log)
  assert.deepEqual(id, { ok: true, id: '00000000-0000-4000-8000-000000000001' })
  assert.equal(fetched.length, 2, 'idOf does not fetch a known document')
})

test('a document without freshness is kept the default time; no-store is fetched every time', async () => {
  const { registry, fetched, serve, clock } = setup()
  serve(['https://app.example.com/cb'])
  await registry.resolve(URL_, log)
  clock.now += 299_000
  await registry.resolve(URL_, log)
  assert.equal(fetched.length, 1)
  serve(['https://app.example.com/cb'], 0)
  clock.now += 2_000
  await registry.resolve(URL_, log)
  await registry.resolve(URL_, log)
  assert.equal(fetched.length, 3)
})

test('changed redirect URIs register a new client; the old id still translates to the URL', async () => {
  const { registry, registered, serve } = setup()
  serve(['https://app.example.com/cb'], 0)
  const first = await registry.resolve(URL_, log)
  serve(['https://app.example.com/cb2'], 0)
  const second = await registry.resolve(URL_, log)
  assert.ok(first.ok && second.ok)
  assert.notEqual(first.id, second.id)
  assert.deepEqual(registered[1]!.redirect_uris, ['https://app.example.com/cb2'])
  assert.equal(await registry.urlOf(first.id), URL_)
  assert.equal(await registry.urlOf(second.id), URL_)
  // Unchanged: no new registration.
  await registry.resolve(URL_, log)
  assert.equal(registered.length, 2)
})

test('the replaced client is marked so; the one standing is not', async () => {
  const { registry, serve } = setup()
  serve(['https://app.example.com/cb'], 0)
  const first = await registry.resolve(URL_, log)
  serve(['https://app.example.com/cb2'], 0)
  const second = await registry.resolve(URL_, log)
  assert.ok(first.ok && second.ok)
  assert.equal(await registry.isReplaced(first.id), true)
  assert.equal(await registry.isReplaced(second.id), false)
})

test('registrations take the quota: past it, the document waits (limited) and nothing is registered', async () => {
  const store = new MemoryClientIdStore({ quota: { perOrigin: 1, total: 10, windowMs: 3_600_000 } })
  const { registry, registered, docs } = setup({ store })
  const other = 'https://app.example.com/other.json'
  for (const url of [URL_, other])
    docs.set(url, () => ({ body: { client_id: url, redirect_uris: ['https://app.example.com/cb'] }, freshMs: 0 }))
  assert.equal((await registry.resolve(URL_, log)).ok, true)
  const refused = await registry.resolve(other, log)
  assert.equal(!refused.ok && refused.kind, 'limited')
  assert.match(!refused.ok ? refused.reason : '', /https:\/\/app\.example\.com/)
  assert.equal(registered.length, 1)
  assert.equal((await registry.resolve(URL_, log)).ok, true, 'a document already registered is not held back')
})

test('the id → URL translations kept in memory are bounded', async () => {
  const store = new MemoryClientIdStore()
  const { registry } = setup({ store, maxUrls: 2 })
  for (let i = 0; i < 3; i++)
    await store.replace(`https://app.example.com/${i}.json`, undefined, {
      id: `id-${i}`,
      redirectUris: ['https://app.example.com/cb'],
      clientName: undefined,
    })
  let reads = 0
  const urlOf = store.urlOf.bind(store)
  store.urlOf = (id) => {
    reads++
    return urlOf(id)
  }
  for (const id of ['id-0', 'id-1', 'id-2', 'id-2', 'id-1']) await registry.urlOf(id)
  assert.equal(reads, 3, 'the two most recently used are kept')
  await registry.urlOf('id-0')
  assert.equal(reads, 4, 'the least recently used went first')
})

test('a record another replica stored first is the one used', async () => {
  const { registry, store, serve } = setup()
  serve(['https://app.example.com/cb'])
  const theirs = { id: '11111111-1111-4111-8111-111111111111', redirectUris: ['x'], clientName: 'Other' }
  // Stored between this replica's read and its write: replace keeps theirs.
  const replace = store.replace.bind(store)
  store.replace = async (url, expected, next) => {
    await replace(url, undefined, theirs)
    return replace(url, expected, next)
  }
  const resolved = await registry.resolve(URL_, log)
  assert.equal(resolved.ok && resolved.id, theirs.id)
})

test('unusable URLs and documents: the reason, as the client’s or the backend’s fault', async () => {
  const { registry, docs } = setup({ origins: ['https://app.example.com'] })
  const problem = async (url: string) => {
    const r = await registry.resolve(url, log)
    assert.equal(r.ok, false, url)
    return r as { kind: string; reason: string }
  }
  assert.match((await problem('http://app.example.com/mcp.json')).reason, /https/)
  assert.match((await problem('https://other.example.com/mcp.json')).reason, /not accepted/)
  assert.match((await problem(URL_)).reason, /404/)
  docs.set(URL_, () => ({ body: { client_id: URL_, redirect_uris: [] }, freshMs: 0 }))
  assert.match((await problem(URL_)).reason, /redirect_uris/)

  const refused = setup({ registerStatus: 400 })
  refused.serve(['https://app.example.com/cb'])
  assert.deepEqual(await refused.registry.resolve(URL_, log), {
    ok: false,
    kind: 'invalid',
    reason: 'Supabase Auth refused to register a client for the document (400: nope)',
  })
  const down = setup({ registerStatus: 403 })
  down.serve(['https://app.example.com/cb'])
  const r = await down.registry.resolve(URL_, log)
  assert.equal(!r.ok && r.kind, 'backend')
})
