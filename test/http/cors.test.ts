import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { withFakeBackend, type Harness } from '../support/app.ts'

/** supabase-js publishes the headers it sends, for servers' CORS configuration. */
const { corsHeaders } = (await import('@supabase/supabase-js/cors')) as { corsHeaders: Record<string, string> }
const SUPABASE_JS_HEADERS = corsHeaders['Access-Control-Allow-Headers']!.split(',').map((h) => h.trim())

describe('CORS with an explicit origin list', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend({ corsOrigins: ['https://app.example.com'] })
    // Supabase Auth allows every origin itself; authgate's answer must win.
    h.backend.handler = (_req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'access-control-allow-origin': '*',
        'access-control-allow-headers': 'Authorization',
      })
      res.end('{}')
    }
  })
  after(() => h.close())

  it('answers the preflight itself, allowing every header supabase-js sends, with credentials', async () => {
    const requested = [...SUPABASE_JS_HEADERS, 'x-supabase-api-version'].join(', ')
    assert.ok(SUPABASE_JS_HEADERS.includes('apikey'))
    const res = await h.app.inject({
      method: 'OPTIONS',
      url: '/auth/token?grant_type=password',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': requested,
      },
    })
    assert.equal(res.statusCode, 204)
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com')
    assert.equal(res.headers['access-control-allow-credentials'], 'true')
    assert.match(String(res.headers['access-control-allow-methods']), /POST/)
    const allowed = String(res.headers['access-control-allow-headers']).toLowerCase().split(/,\s*/)
    for (const name of requested.split(', ')) assert.ok(allowed.includes(name.toLowerCase()), `${name} not allowed`)
    assert.equal(h.backend.requests.length, 0, 'the preflight never reaches the backend')
  })

  it("answers from the backend carry authgate's CORS headers, not the backend's, and expose the API version", async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/auth/settings',
      headers: { origin: 'https://app.example.com' },
    })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com')
    assert.equal(res.headers['access-control-allow-credentials'], 'true')
    assert.match(String(res.headers['access-control-expose-headers']), /X-Supabase-Api-Version/)
    assert.equal(res.headers['access-control-allow-headers'], undefined)
  })

  it("authgate's own errors carry CORS headers too", async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/auth/admin/users',
      headers: { origin: 'https://app.example.com' },
    })
    assert.equal(res.statusCode, 404)
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com')
  })

  it('another origin gets no CORS permission', async () => {
    const res = await h.app.inject({
      method: 'OPTIONS',
      url: '/auth/token',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    })
    assert.equal(res.headers['access-control-allow-origin'], undefined)
    const get = await h.app.inject({
      method: 'GET',
      url: '/auth/settings',
      headers: { origin: 'https://evil.example' },
    })
    assert.equal(get.headers['access-control-allow-origin'], undefined)
  })
})

describe('CORS with *', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend({ corsOrigins: ['*'] })
  })
  after(() => h.close())

  it('allows any origin without credentials', async () => {
    const res = await h.app.inject({
      method: 'OPTIONS',
      url: '/auth/signup',
      headers: {
        origin: 'https://any.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'apikey',
      },
    })
    assert.equal(res.statusCode, 204)
    assert.equal(res.headers['access-control-allow-origin'], '*')
    assert.equal(res.headers['access-control-allow-credentials'], undefined)
  })
})

describe('without AUTHGATE_CORS_ORIGINS', () => {
  it("no CORS handling: the backend's own headers pass through as before", async () => {
    const h = await withFakeBackend()
    try {
      h.backend.handler = (_req, res) => res.writeHead(200, { 'access-control-allow-origin': '*' }).end('{}')
      const res = await h.app.inject({ method: 'GET', url: '/auth/settings', headers: { origin: 'https://a.example' } })
      assert.equal(res.headers['access-control-allow-origin'], '*')
    } finally {
      await h.close()
    }
  })
})
