import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CLIENT_ADDRESS_HEADERS } from '../../src/proxy/headers.ts'
import { withFakeBackend } from '../support/app.ts'
import { rawExchange, splitResponse } from '../support/raw-http.ts'

/** Every header a gateway or CDN carries a client address in, as a client would forge it. */
const FORGED: Record<string, string> = {
  'true-client-ip': '192.0.2.1',
  'cf-connecting-ip': '192.0.2.2',
  'x-client-ip': '192.0.2.3',
  'fly-client-ip': '192.0.2.4',
  'fastly-client-ip': '192.0.2.5',
  'x-cluster-client-ip': '192.0.2.6',
  'x-real-ip': '192.0.2.7',
  'x-original-forwarded-for': '192.0.2.8',
  'x-proxyuser-ip': '192.0.2.9',
  'client-ip': '192.0.2.10',
  'x-envoy-external-address': '192.0.2.11',
  'sb-forwarded-for': '192.0.2.12',
  forwarded: 'for=192.0.2.13',
}

const valuesOf = (recorded: { rawHeaders: string[] }, name: string) =>
  recorded.rawHeaders.filter((_, i, a) => i % 2 === 1 && a[i - 1]!.toLowerCase() === name)

describe('identity headers are authgate’s alone', () => {
  it('the list names every forged header of this test', () => {
    for (const name of Object.keys(FORGED)) assert.ok(CLIENT_ADDRESS_HEADERS.includes(name), name)
  })

  for (const [peer, trusted] of [
    ['a direct client', []],
    ['a trusted proxy', ['10.0.0.0/8']],
  ] as const) {
    it(`none reaches Supabase Auth from ${peer}: only the address authgate derived, in X-Forwarded-For and the configured header`, async (t) => {
      // The configured header is one of the forged ones: the client's copy must not survive beside authgate's.
      const h = await withFakeBackend({ trustedProxies: [...trusted], clientIpHeader: 'cf-connecting-ip' })
      t.after(() => h.close())
      await h.app.inject({
        method: 'GET',
        url: '/auth/settings',
        remoteAddress: '10.0.0.2',
        headers: { ...FORGED, 'x-forwarded-for': '203.0.113.7' },
      })
      const sent = h.backend.requests.at(-1)!
      const client = trusted.length > 0 ? '203.0.113.7' : '10.0.0.2'
      for (const name of Object.keys(FORGED)) {
        const expected = name === 'cf-connecting-ip' ? [client] : []
        assert.deepEqual(valuesOf(sent, name), expected, name)
      }
      assert.deepEqual(valuesOf(sent, 'x-forwarded-for'), [client])
    })
  }

  it('nor in another spelling an upstream may fold into the same name (`X_Real_IP`, `X.Real.IP`)', async (t) => {
    const h = await withFakeBackend({ trustedProxies: ['10.0.0.0/8'] })
    t.after(() => h.close())
    const spelled = {
      X_Real_IP: '192.0.2.20',
      'X.Real.IP': '192.0.2.21',
      True_Client_IP: '192.0.2.22',
      x_forwarded_for: '192.0.2.23',
      'x-vercel-forwarded-for': '192.0.2.24',
      'X-Originating-IP': '192.0.2.25',
      // Not an address header: an underscore alone does not drop a header.
      x_custom_thing: 'kept',
    }
    await h.app.inject({ method: 'GET', url: '/auth/settings', remoteAddress: '10.0.0.2', headers: spelled })
    const sent = h.backend.requests.at(-1)!
    for (const name of Object.keys(spelled).slice(0, -1)) assert.deepEqual(valuesOf(sent, name.toLowerCase()), [], name)
    assert.deepEqual(valuesOf(sent, 'x_custom_thing'), ['kept'])
  })

  it('a direct client’s X-Forwarded-Host and -Proto are replaced by authgate’s own view', async (t) => {
    const h = await withFakeBackend({ trustedProxies: ['10.0.0.0/8'] })
    t.after(() => h.close())
    await h.app.inject({
      method: 'GET',
      url: '/auth/settings',
      remoteAddress: '198.51.100.7',
      headers: { host: 'api.example.com', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
    })
    const sent = h.backend.requests.at(-1)!
    assert.deepEqual(valuesOf(sent, 'x-forwarded-host'), ['api.example.com'])
    assert.deepEqual(valuesOf(sent, 'x-forwarded-proto'), ['http'])
  })

  it('a trusted proxy’s X-Forwarded-Host and -Proto are passed on (the entry it appended)', async (t) => {
    const h = await withFakeBackend({ trustedProxies: ['10.0.0.0/8'] })
    t.after(() => h.close())
    await h.app.inject({
      method: 'GET',
      url: '/auth/settings',
      remoteAddress: '10.0.0.2',
      headers: {
        host: 'authgate.internal:8080',
        'x-forwarded-host': 'forged.example, api.example.com',
        'x-forwarded-proto': 'https',
      },
    })
    const sent = h.backend.requests.at(-1)!
    assert.deepEqual(valuesOf(sent, 'x-forwarded-host'), ['api.example.com'])
    assert.deepEqual(valuesOf(sent, 'x-forwarded-proto'), ['https'])
  })

  it('a trusted proxy that sends none: authgate’s own view', async (t) => {
    const h = await withFakeBackend({ trustedProxies: ['10.0.0.0/8'] })
    t.after(() => h.close())
    await h.app.inject({
      method: 'GET',
      url: '/auth/settings',
      remoteAddress: '10.0.0.2',
      headers: { host: 'api.example.com' },
    })
    const sent = h.backend.requests.at(-1)!
    assert.deepEqual(valuesOf(sent, 'x-forwarded-host'), ['api.example.com'])
    assert.deepEqual(valuesOf(sent, 'x-forwarded-proto'), ['http'])
  })
})

describe('a repeated Host header', () => {
  it('is refused 400 in authgate’s shape at the socket, and nothing is forwarded', async (t) => {
    const h = await withFakeBackend()
    t.after(() => h.close())
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (h.app.server.address() as { port: number }).port
    const raw = await rawExchange(
      port,
      'GET /auth/settings HTTP/1.1\r\nHost: api.example.com\r\nhost: evil.example\r\nConnection: close\r\n\r\n',
    )
    const res = splitResponse(raw)
    assert.match(res.statusLine, /^HTTP\/1\.1 400 /)
    assert.deepEqual(JSON.parse(res.body.toString()), {
      code: 400,
      error_code: 'malformed_request',
      msg: 'A request must carry one Host header',
    })
    assert.ok(res.headerLines.some((l) => /^x-request-id: /i.test(l)))
    assert.equal(h.backend.requests.length, 0)
    // One Host goes through as before.
    const one = splitResponse(
      await rawExchange(port, 'GET /auth/settings HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n'),
    )
    assert.match(one.statusLine, /^HTTP\/1\.1 200 /)
    assert.equal(h.backend.requests.length, 1)
  })

  it('one Host holding a list is refused the same way', async (t) => {
    const h = await withFakeBackend()
    t.after(() => h.close())
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (h.app.server.address() as { port: number }).port
    const res = splitResponse(
      await rawExchange(
        port,
        'GET /auth/settings HTTP/1.1\r\nHost: api.example.com, evil.example\r\nConnection: close\r\n\r\n',
      ),
    )
    assert.match(res.statusLine, /^HTTP\/1\.1 400 /)
    assert.equal(JSON.parse(res.body.toString()).msg, 'A request must carry one Host header')
    assert.equal(h.backend.requests.length, 0)
  })
})
