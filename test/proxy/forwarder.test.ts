import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'

const V2024 = { 'x-supabase-api-version': '2024-01-01' }

describe('backend answers pass through unchanged', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  for (const status of [400, 401, 403, 404, 422, 429, 500, 503]) {
    test(`status ${status} and its body come back unchanged`, async () => {
      const body = `{"code":${status},"error_code":"weak_password","msg":"Password \\u00e9 too weak","weak_password":{"reasons":["length"]}}`
      h.backend.handler = (_req, res) => {
        res.writeHead(status, {
          'content-type': 'application/json',
          'x-sb-error-code': 'weak_password',
          'x-supabase-api-version': '2024-01-01',
        })
        res.end(body)
      }
      const res = await h.app.inject({ method: 'GET', url: '/auth/user', headers: V2024 })
      assert.equal(res.statusCode, status)
      assert.equal(res.body, body)
      assert.equal(res.headers['x-sb-error-code'], 'weak_password')
      assert.equal(res.headers['x-supabase-api-version'], '2024-01-01')
    })
  }

  test('every Set-Cookie stays a separate header; hop-by-hop response headers are dropped', async () => {
    h.backend.handler = (_req, res) => {
      res.setHeader('Set-Cookie', ['a=1; Path=/; HttpOnly', 'b=2; Path=/auth'])
      res.setHeader('Connection', 'keep-alive, X-Internal')
      res.setHeader('X-Internal', 'secret')
      res.setHeader('Keep-Alive', 'timeout=5')
      res.setHeader('Proxy-Authenticate', 'Basic')
      res.setHeader('Cache-Control', 'public, max-age=600')
      res.end('{}')
    }
    const res = await h.app.inject({ method: 'GET', url: '/auth/.well-known/jwks.json' })
    assert.deepEqual(res.headers['set-cookie'], ['a=1; Path=/; HttpOnly', 'b=2; Path=/auth'])
    assert.equal(res.headers['x-internal'], undefined)
    assert.equal(res.headers['keep-alive'], undefined)
    assert.equal(res.headers['proxy-authenticate'], undefined)
    assert.equal(res.headers['cache-control'], 'public, max-age=600')
  })

  test("the backend path is the route's, with the raw query, however the request spelled its path", async () => {
    const seen: string[] = []
    h.backend.handler = (req, res) => {
      seen.push(req.url ?? '')
      res.end('{}')
    }
    for (const url of [
      '/auth/settings',
      '/auth/settings?',
      '/auth/settings?a=%41&b',
      '/auth/s%65ttings?x=1',
      '/auth/%73ettings',
      '/auth/.well-known/jwks.json?k=v',
    ])
      await h.app.inject({ method: 'GET', url })
    // (An empty query's `?` is dropped by the injection, before authgate.)
    assert.deepEqual(seen, [
      '/settings',
      '/settings',
      '/settings?a=%41&b',
      '/settings?x=1',
      '/settings',
      '/.well-known/jwks.json?k=v',
    ])
  })

  test('a 204 without a body comes back as 204', async () => {
    h.backend.handler = (_req, res) => {
      res.writeHead(204)
      res.end()
    }
    const res = await h.app.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: 'Bearer t' } })
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
  })

  test('a large streamed body arrives intact', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 'x')
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      res.write(big.subarray(0, 1000))
      setTimeout(() => res.end(big.subarray(1000)), 5)
    }
    const res = await h.app.inject({ method: 'GET', url: '/auth/settings' })
    assert.equal(res.rawPayload.length, big.length)
    assert.ok(res.rawPayload.equals(big))
  })
})

describe('backpressure over real sockets', () => {
  test('a slow client receives a large body intact, and small bodies arrive in one piece', async () => {
    const h = await withFakeBackend()
    try {
      const big = Buffer.alloc(8 * 1024 * 1024)
      for (let i = 0; i < big.length; i++) big[i] = i % 251
      h.backend.handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' })
        res.end(big)
      }
      await h.app.listen({ port: 0, host: '127.0.0.1' })
      const port = (h.app.server.address() as AddressInfo).port
      const { request } = await import('node:http')
      const received = await new Promise<Buffer>((resolve, reject) => {
        request({ port, path: '/auth/settings' }, (res) => {
          const chunks: Buffer[] = []
          res.pause()
          // Let authgate's writes back up before reading anything.
          setTimeout(() => {
            res.on('data', (c: Buffer) => chunks.push(c))
            res.on('end', () => resolve(Buffer.concat(chunks)))
            res.resume()
          }, 300)
        })
          .on('error', reject)
          .end()
      })
      assert.equal(received.length, big.length)
      assert.ok(received.equals(big))
    } finally {
      await h.close()
    }
  })
})

describe('request headers', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  test('end-to-end headers are forwarded; hop-by-hop, Connection-named and spoofable ones are not', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/auth/user',
      headers: {
        authorization: 'Bearer abc',
        apikey: 'anon-key',
        'x-client-info': 'supabase-js/2.119.1',
        'x-supabase-api-version': '2024-01-01',
        redirect_to: 'http://localhost:3000/x',
        referer: 'http://localhost:3000/page',
        'user-agent': 'test-agent/1.0',
        origin: 'http://localhost:3000',
        accept: 'application/json',
        connection: 'keep-alive, X-Drop-Me',
        'x-drop-me': '1',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        trailer: 'X-Foo',
        upgrade: 'websocket',
        'proxy-authorization': 'Basic c2VjcmV0',
        'proxy-connection': 'keep-alive',
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'gopher',
        'x-forwarded-port': '6666',
        forwarded: 'for=6.6.6.6',
        'x-real-ip': '6.6.6.6',
        'sb-forwarded-for': '6.6.6.6',
        'x-jwt-aud': 'service_role',
      },
      remoteAddress: '203.0.113.9',
    })
    assert.equal(res.statusCode, 200)
    const got = h.backend.requests.at(-1)!.headers
    for (const [k, v] of Object.entries({
      authorization: 'Bearer abc',
      apikey: 'anon-key',
      'x-client-info': 'supabase-js/2.119.1',
      'x-supabase-api-version': '2024-01-01',
      redirect_to: 'http://localhost:3000/x',
      referer: 'http://localhost:3000/page',
      'user-agent': 'test-agent/1.0',
      origin: 'http://localhost:3000',
      accept: 'application/json',
    }))
      assert.equal(got[k], v, k)
    for (const k of [
      'x-drop-me',
      'keep-alive',
      'te',
      'trailer',
      'upgrade',
      'proxy-authorization',
      'proxy-connection',
      'forwarded',
      'x-real-ip',
      'sb-forwarded-for',
      'x-jwt-aud',
    ]) {
      assert.equal(got[k], undefined, k)
    }
    // Exact values: Node joins repeated headers, so a leaked client value would show up as
    // `evil.example, localhost:80` and must fail here.
    assert.equal(got['x-forwarded-for'], '203.0.113.9')
    assert.equal(got['x-forwarded-host'], 'localhost:80')
    assert.equal(got['x-forwarded-proto'], 'http')
    assert.equal(got['x-forwarded-port'], undefined)
    const raw = h.backend.requests.at(-1)!.rawHeaders
    const lines = (name: string) => raw.filter((_, i) => i % 2 === 0 && raw[i]!.toLowerCase() === name).length
    for (const name of ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto']) assert.equal(lines(name), 1, name)
  })

  test('with trusted proxies, the right-most untrusted X-Forwarded-For entry is the client', async () => {
    const h2 = await withFakeBackend({ trustedProxies: ['10.0.0.0/8'] })
    try {
      await h2.app.inject({
        method: 'GET',
        url: '/auth/settings',
        headers: { 'x-forwarded-for': '6.6.6.6, 198.51.100.7, 10.1.1.1' },
        remoteAddress: '10.0.0.2',
      })
      assert.equal(h2.backend.requests.at(-1)!.headers['x-forwarded-for'], '198.51.100.7')
      // From an untrusted peer the header changes nothing.
      await h2.app.inject({
        method: 'GET',
        url: '/auth/settings',
        headers: { 'x-forwarded-for': '6.6.6.6' },
        remoteAddress: '203.0.113.5',
      })
      assert.equal(h2.backend.requests.at(-1)!.headers['x-forwarded-for'], '203.0.113.5')
    } finally {
      await h2.close()
    }
  })
})

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer()
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

describe('backend failures', () => {
  test('a closed backend port gives 502 in both error shapes, without the internal address', async () => {
    const port = await closedPort()
    const app = await buildApp({ config: { backendUrl: parseBackendUrl('t', `http://127.0.0.1:${port}`) } })
    try {
      for (const url of ['/auth/settings', '/auth/authorize?provider=github', '/auth/verify?token=x&type=signup']) {
        const legacy = await app.inject({ method: 'GET', url })
        assert.equal(legacy.statusCode, 502)
        assert.deepEqual(legacy.json(), {
          code: 502,
          error_code: 'backend_unreachable',
          msg: 'The authentication backend could not be reached',
        })
        assert.doesNotMatch(legacy.body, new RegExp(String(port)))
      }
      const current = await app.inject({
        method: 'POST',
        url: '/auth/token?grant_type=password',
        payload: '{"email":"a@example.com","password":"x"}',
        headers: { 'content-type': 'application/json', ...V2024 },
      })
      assert.equal(current.statusCode, 502)
      assert.deepEqual(current.json(), {
        code: 'backend_unreachable',
        message: 'The authentication backend could not be reached',
      })
      assert.equal(current.headers['x-supabase-api-version'], '2024-01-01')
    } finally {
      await app.close()
    }
  })

  test('a backend that never answers gives 504 in both error shapes', async () => {
    const sockets: import('node:net').Socket[] = []
    const silent = createServer((s) => sockets.push(s))
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    const port = (silent.address() as AddressInfo).port
    const app = await buildApp({
      config: { backendUrl: parseBackendUrl('t', `http://127.0.0.1:${port}`), backendTimeoutMs: 200 },
    })
    try {
      const legacy = await app.inject({ method: 'GET', url: '/auth/health' })
      assert.equal(legacy.statusCode, 504)
      assert.deepEqual(legacy.json(), {
        code: 504,
        error_code: 'request_timeout',
        msg: 'The authentication backend did not answer in time',
      })
      const current = await app.inject({ method: 'GET', url: '/auth/health', headers: V2024 })
      assert.equal(current.statusCode, 504)
      assert.equal(current.json().code, 'request_timeout')
    } finally {
      await app.close()
      for (const s of sockets) s.destroy()
      silent.close()
    }
  })
})

describe('a mended answer (the dynamic registration, docs/decisions.md D28)', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())
  const register = () =>
    h.app.inject({
      method: 'POST',
      url: '/auth/oauth/clients/register',
      headers: { 'content-type': 'application/json' },
      payload: { redirect_uris: ['http://localhost:3000/cb'] },
    })

  test('is held whole and relayed with the field added, its headers kept and its length updated', async () => {
    h.backend.handler = (_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'r1', 'set-cookie': ['a=1', 'b=2'] })
      res.write('{"client_id":"c1",')
      setTimeout(() => res.end('"client_secret":"s"}'), 5)
    }
    const res = await register()
    assert.equal(res.statusCode, 201)
    assert.equal(res.body, '{"client_id":"c1","client_secret":"s","client_secret_expires_at":0}')
    assert.equal(res.headers['content-length'], String(res.rawPayload.length))
    assert.equal(res.headers['x-request-id'], 'r1')
    assert.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2'])
  })

  test('a backend that fails in the middle of it gives our 502, not a cut answer', async () => {
    h.backend.handler = (_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': '100' })
      res.write('{"client_id":"c1",')
      setTimeout(() => res.destroy(), 5)
    }
    const res = await register()
    assert.equal(res.statusCode, 502)
    assert.equal(res.json().error_code, 'backend_unreachable')
  })
})
