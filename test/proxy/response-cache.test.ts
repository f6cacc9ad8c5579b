import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { freshnessMs, ResponseCache } from '../../src/proxy/response-cache.ts'
import { withFakeBackend } from '../support/app.ts'

describe('freshnessMs', () => {
  it('uses max-age, prefers s-maxage, falls back to the default TTL', () => {
    assert.equal(freshnessMs(200, ['Cache-Control', 'public, max-age=600'], 5000), 600_000)
    assert.equal(freshnessMs(200, ['cache-control', 'max-age=600, s-maxage=30'], 5000), 30_000)
    assert.equal(freshnessMs(200, ['Content-Type', 'application/json'], 5000), 5000)
    assert.equal(freshnessMs(200, ['Cache-Control', 'public'], 5000), 5000)
  })
  it('never stores no-store, no-cache, private, Set-Cookie, Vary: * or non-200 answers', () => {
    for (const cc of ['no-store', 'no-cache', 'private, max-age=60', 'max-age=60, No-Store'])
      assert.equal(freshnessMs(200, ['Cache-Control', cc], 5000), 0, cc)
    assert.equal(freshnessMs(200, ['Set-Cookie', 'a=b', 'Cache-Control', 'max-age=60'], 5000), 0)
    assert.equal(freshnessMs(200, ['Vary', '*'], 5000), 0)
    assert.equal(freshnessMs(404, ['Cache-Control', 'max-age=60'], 5000), 0)
    assert.equal(freshnessMs(302, [], 5000), 0)
  })
})

describe('ResponseCache', () => {
  it('expires entries and counts Age from the backend', () => {
    let now = 0
    const cache = new ResponseCache({ defaultTtlMs: 1000, now: () => now })
    cache.store('k', 200, ['Age', '2', 'Cache-Control', 'max-age=5'], Buffer.from('x'), {})
    const hit = cache.get('k', {})
    assert.ok(hit)
    assert.equal(cache.ageSeconds(hit), 2)
    assert.deepEqual(hit.headers, ['Cache-Control', 'max-age=5'])
    now = 2999
    assert.ok(cache.get('k', {}))
    now = 3000
    assert.equal(cache.get('k', {}), undefined)
  })
  it('holds a bounded number of entries and never stores large bodies', () => {
    const cache = new ResponseCache({ defaultTtlMs: 1000, maxEntries: 2, maxBodyBytes: 4 })
    for (const k of ['a', 'b', 'c']) cache.store(k, 200, [], Buffer.from('x'), {})
    assert.equal(cache.size, 2)
    assert.equal(cache.get('a', {}), undefined)
    cache.store('big', 200, [], Buffer.from('12345'), {})
    assert.equal(cache.get('big', {}), undefined)
  })
  it('drops the least recently used entry first: a read counts as a use', () => {
    const cache = new ResponseCache({ defaultTtlMs: 1000, maxEntries: 2 })
    cache.store('a', 200, [], Buffer.from('x'), {})
    cache.store('b', 200, [], Buffer.from('x'), {})
    assert.ok(cache.get('a', {}))
    cache.store('c', 200, [], Buffer.from('x'), {})
    assert.ok(cache.get('a', {}), 'a was read after b was stored, so b goes first')
    assert.equal(cache.get('b', {}), undefined)
    assert.ok(cache.get('c', {}))
  })
  it('a zero default TTL stores only what the backend marks fresh', () => {
    const cache = new ResponseCache({ defaultTtlMs: 0 })
    cache.store('a', 200, [], Buffer.from('x'), {})
    cache.store('b', 200, ['Cache-Control', 'max-age=1'], Buffer.from('x'), {})
    assert.equal(cache.get('a', {}), undefined)
    assert.ok(cache.get('b', {}))
  })
})

describe('cacheable routes through authgate', () => {
  it('answers /settings from the cache: one backend request for many, same bytes', async (t) => {
    const h = await withFakeBackend({ cacheTtlMs: 10_000 })
    t.after(() => h.close())
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-n': String(h.backend.requests.length) })
      res.end('{"external":{"email":true}}')
    }
    const first = await h.app.inject({ method: 'GET', url: '/auth/settings' })
    const second = await h.app.inject({ method: 'GET', url: '/auth/settings' })
    assert.equal(h.backend.requests.length, 1)
    assert.equal(second.statusCode, 200)
    assert.equal(second.body, first.body)
    assert.equal(second.headers['x-n'], '1')
    assert.equal(second.headers['content-type'], 'application/json')
    assert.equal(second.headers.age, '0')
    assert.equal(first.headers.age, undefined)
  })

  it('honours the backend: max-age on /.well-known, no-store, non-200', async (t) => {
    const h = await withFakeBackend({ cacheTtlMs: 10_000 })
    t.after(() => h.close())
    let cacheControl = 'public, max-age=600'
    let status = 200
    h.backend.handler = (_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': cacheControl })
      res.end('{"keys":[]}')
    }
    await h.app.inject({ method: 'GET', url: '/auth/.well-known/jwks.json' })
    await h.app.inject({ method: 'GET', url: '/auth/.well-known/jwks.json' })
    assert.equal(h.backend.requests.length, 1)

    cacheControl = 'no-store'
    await h.app.inject({ method: 'GET', url: '/auth/.well-known/openid-configuration' })
    await h.app.inject({ method: 'GET', url: '/auth/.well-known/openid-configuration' })
    assert.equal(h.backend.requests.length, 3)

    cacheControl = 'max-age=600'
    status = 404
    await h.app.inject({ method: 'GET', url: '/auth/.well-known/oauth-authorization-server' })
    await h.app.inject({ method: 'GET', url: '/auth/.well-known/oauth-authorization-server' })
    assert.equal(h.backend.requests.length, 5)
  })

  it('never mixes answers across query strings, hosts, API keys or Vary, and skips Authorization', async (t) => {
    const h = await withFakeBackend({ cacheTtlMs: 10_000 })
    t.after(() => h.close())
    h.backend.handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', vary: 'Accept-Language' })
      res.end(
        JSON.stringify({
          target: req.url,
          host: req.headers['x-forwarded-host'],
          lang: req.headers['accept-language'],
        }),
      )
    }
    const get = async (url: string, headers: Record<string, string> = {}) =>
      JSON.parse((await h.app.inject({ method: 'GET', url, headers })).body) as Record<string, unknown>

    assert.equal((await get('/auth/settings?a=1')).target, '/settings?a=1')
    assert.equal((await get('/auth/settings?a=2')).target, '/settings?a=2')
    assert.equal((await get('/auth/settings?a=1')).target, '/settings?a=1')
    assert.equal(h.backend.requests.length, 2)

    assert.equal((await get('/auth/settings', { host: 'one.example' })).host, 'one.example')
    assert.equal((await get('/auth/settings', { host: 'two.example' })).host, 'two.example')
    await get('/auth/settings', { host: 'one.example', apikey: 'k1' })
    assert.equal(h.backend.requests.length, 5)

    assert.equal((await get('/auth/settings', { 'accept-language': 'de' })).lang, 'de')
    assert.equal((await get('/auth/settings', { 'accept-language': 'fr' })).lang, 'fr')
    assert.equal(h.backend.requests.length, 7)

    const before = h.backend.requests.length
    await get('/auth/settings?b', { authorization: 'Bearer x' })
    await get('/auth/settings?b', { authorization: 'Bearer x' })
    assert.equal(h.backend.requests.length, before + 2)
  })

  it('AUTHGATE_CACHE_TTL=0 forwards what the backend does not mark cacheable', async (t) => {
    const h = await withFakeBackend({ cacheTtlMs: 0 })
    t.after(() => h.close())
    await h.app.inject({ method: 'GET', url: '/auth/settings' })
    await h.app.inject({ method: 'GET', url: '/auth/settings' })
    assert.equal(h.backend.requests.length, 2)
  })

  it('routes not marked cacheable always reach the backend', async (t) => {
    const h = await withFakeBackend({ cacheTtlMs: 10_000 })
    t.after(() => h.close())
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=600' })
      res.end('{"status":"ok"}')
    }
    await h.app.inject({ method: 'GET', url: '/auth/health' })
    await h.app.inject({ method: 'GET', url: '/auth/health' })
    assert.equal(h.backend.requests.length, 2)
  })
})
