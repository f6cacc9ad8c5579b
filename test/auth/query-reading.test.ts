import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { backendPairs, backendQuery, backendUrlQuery, backendValues, queryUnescape } from '../../src/core/go-values.ts'
import { MemoryStore } from '../../src/ratelimit/memory-store.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { withFakeBackend } from '../support/app.ts'

describe('query values as Go reads them', () => {
  it('pairs keep their bytes, with what Go reads of each; a URL is read up to its fragment', () => {
    assert.deepEqual(backendPairs('a=1&b=2;&c%5F=%zz&d%5F=x+y&&e'), [
      { raw: 'a=1', read: { key: 'a', value: '1' } },
      { raw: 'b=2;' },
      { raw: 'c%5F=%zz' },
      { raw: 'd%5F=x+y', read: { key: 'd_', value: 'x y' } },
      { raw: '' },
      { raw: 'e', read: { key: 'e', value: '' } },
    ])
    assert.deepEqual(backendPairs(''), [])
    assert.ok(backendPairs('a=1' + '&x'.repeat(10_000)).every((p) => p.read === undefined))
    assert.deepEqual({ ...backendUrlQuery('https://c.example/cb?code=1;&error=e#code=2') }, { error: 'e' })
  })
  it('takes the first value of a repeated name, `+` as a space', () => {
    assert.deepEqual(
      { ...backendQuery('/token?grant_type=password&grant_type=refresh_token') },
      {
        grant_type: 'password',
      },
    )
    assert.deepEqual({ ...backendValues('a=1+2&b&c=%41%2B&&a=3') }, { a: '1 2', b: '', c: 'A+' })
    assert.deepEqual({ ...backendQuery('/token') }, {})
    assert.deepEqual({ ...backendQuery('/token?') }, {})
  })

  it('drops a pair holding a semicolon or a malformed escape, as Go does', () => {
    assert.deepEqual(
      { ...backendQuery('/t?grant_type=password;&grant_type=refresh_token') },
      {
        grant_type: 'refresh_token',
      },
    )
    assert.deepEqual({ ...backendQuery('/t?grant_type=%zz&grant_type=password') }, { grant_type: 'password' })
    assert.deepEqual({ ...backendQuery('/t?gr%ant_type=x&grant_type=password') }, { grant_type: 'password' })
    assert.deepEqual({ ...backendQuery('/t?grant_type=password%') }, {})
    assert.equal(queryUnescape('%4'), undefined)
  })

  it('keeps escaped bytes that are not UTF-8 as replacement characters, and reads none past 10,000 pairs', () => {
    assert.equal(queryUnescape('a%FFb+c'), 'a\uFFFDb c')
    assert.equal(queryUnescape('%C3%A9'), 'é')
    assert.deepEqual({ ...backendValues('a=1' + '&x'.repeat(9_999)) }.a, '1')
    assert.deepEqual({ ...backendValues('a=1' + '&x'.repeat(10_000)) }, {})
  })
})

describe('a repeated query parameter is read as its first value everywhere', () => {
  async function harness() {
    const h = await withFakeBackend(
      {},
      {
        rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMITED_ROUTES: 'none', AUTHGATE_ACCOUNT_RATE_LIMIT: '2/1h' }),
        rateLimitStore: new MemoryStore(),
      },
    )
    h.backend.handler = (req, res) => {
      // A wrong password, as Supabase Auth answers it: the per-account limit counts failures only.
      if (req.url?.startsWith('/token?grant_type=password')) {
        res.writeHead(400, { 'content-type': 'application/json', 'x-sb-error-code': 'invalid_credentials' })
        res.end('{"code":400,"error_code":"invalid_credentials","msg":"Invalid login credentials"}')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(req.url === '/settings' ? '{"mailer_autoconfirm":false}' : '{}')
    }
    return h
  }

  it('password sign-ins under repeated or dropped grant_type pairs count against the account', async (t) => {
    const h = await harness()
    t.after(() => h.close())
    const targets = [
      '/auth/token?grant_type=password&grant_type=password',
      '/auth/token?grant_type=password&grant_type=refresh_token',
      '/auth/token?grant_type=password;&grant_type=password',
      '/auth/token?grant_type=%zz&grant_type=password',
    ]
    const statuses: number[] = []
    for (const url of targets) {
      const res = await h.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload: '{"email":"victim@example.com","password":"hunter22"}',
      })
      statuses.push(res.statusCode)
    }
    assert.deepEqual(statuses, [400, 400, 429, 429])
    assert.equal(h.backend.requests.filter((r) => r.target.startsWith('/token')).length, 2)
  })

  it('a grant the backend reads as another is not a password sign-in', async (t) => {
    const h = await harness()
    t.after(() => h.close())
    for (let i = 0; i < 3; i++) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/auth/token?grant_type=refresh_token&grant_type=password',
        headers: { 'content-type': 'application/json' },
        payload: '{"email":"victim@example.com","refresh_token":"abc"}',
      })
      assert.equal(res.statusCode, 200)
    }
  })

  it('the query checks judge the first value (pkce needs its code and verifier)', async (t) => {
    const h = await harness()
    t.after(() => h.close())
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/token?grant_type=pkce&grant_type=password',
      headers: { 'content-type': 'application/json' },
      payload: '{"email":"victim@example.com","password":"hunter22"}',
    })
    assert.equal(res.statusCode, 400, res.body)
    assert.equal(h.backend.requests.filter((r) => r.target.startsWith('/token')).length, 0)
  })
})
