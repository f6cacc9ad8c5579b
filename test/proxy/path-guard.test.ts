import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { Client } from 'undici'
import { AUTH_ROUTES } from '../../src/auth/routes/index.ts'
import { checkParamSegment } from '../../src/proxy/path-guard.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'
import { rawExchange } from '../support/raw-http.ts'

describe('checkParamSegment', () => {
  const rejected = [
    '',
    '.',
    '..',
    '%2e',
    '%2E%2e',
    '.%2e',
    'a/b',
    '%2F',
    'a%2fb',
    '%5C',
    'a%5cb',
    '%00',
    'a%0d%0aSet-Cookie:x',
    '%',
    '%zz',
    '%e2%82',
    '%C0%AE%C0%AE',
    '%7f',
  ]
  for (const raw of rejected)
    test(`rejects ${JSON.stringify(raw)}`, () => assert.equal(checkParamSegment(raw).ok, false))
  const accepted: Array<[string, string]> = [
    ['8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71', '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71'],
    ['...', '...'],
    ['a.b', 'a.b'],
    ['%252e%252e', '%252e%252e'], // decodes once to "%2e%2e", a literal id, re-encoded: never decoded twice
    ['caf%C3%A9', 'caf%C3%A9'],
    ['a%20b', 'a%20b'],
  ]
  for (const [raw, encoded] of accepted) {
    test(`accepts ${JSON.stringify(raw)} as ${encoded}`, () => {
      const r = checkParamSegment(raw)
      assert.ok(r.ok)
      assert.equal(r.encoded, encoded)
    })
  }
})

describe('PATCH/DELETE /passkeys/{id} over real sockets', () => {
  let h: Harness
  let client: Client
  before(async () => {
    h = await withFakeBackend()
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    client = new Client(`http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`)
  })
  after(async () => {
    await client.close()
    await h.close()
  })

  async function send(method: 'PATCH' | 'DELETE', rawSegment: string) {
    const res = await client.request({
      method,
      path: '/auth/passkeys/' + rawSegment,
      ...(method === 'PATCH' ? { body: '{"friendly_name":"x"}', headers: { 'content-type': 'application/json' } } : {}),
    })
    const text = await res.body.text()
    return { status: res.statusCode, text }
  }

  test('/passkeys/ and /passkeys/a/b get 400 validation_failed, not 404, and reach nothing', async () => {
    for (const method of ['PATCH', 'DELETE'] as const) {
      for (const seg of ['', 'a/b', 'a/', '../user', '%2e%2e/admin', 'x/../../admin/users']) {
        h.backend.requests.length = 0
        const r = await send(method, seg)
        assert.equal(r.status, 400, `${method} ${seg}: ${r.text}`)
        assert.equal(JSON.parse(r.text).error_code, 'validation_failed')
        assert.equal(h.backend.requests.length, 0)
      }
    }
  })

  // Segment pieces a traversal attempt is made of, mixed with benign text.
  const piece = fc.constantFrom(
    '..',
    '.',
    '%2e',
    '%2E',
    '%252e',
    '%2f',
    '%2F',
    '%252F',
    '%5c',
    '%5C',
    '%00',
    '%0a',
    '%',
    '%g1',
    '%c0%af',
    'admin',
    'a',
    '-',
    '~',
    '%20',
    'é',
    '%E2%9C%93',
  )
  const hostile = fc.array(piece, { minLength: 1, maxLength: 6 }).map((xs) => xs.join(''))
  const benign = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).map((s) => encodeURIComponent(s))

  test('property: a rejected id causes zero backend requests; an accepted one reaches exactly /passkeys/<the same id>', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(hostile, benign),
        fc.constantFrom('PATCH' as const, 'DELETE' as const),
        async (seg, method) => {
          h.backend.requests.length = 0
          let rawForUndici = seg
          // undici refuses raw non-ASCII in a path; a browser would percent-encode it the same way.
          rawForUndici = rawForUndici.replace(/[^\x21-\x7e]/gu, (c) => encodeURIComponent(c))
          const r = await send(method, rawForUndici)
          if (r.status === 400) {
            assert.equal(JSON.parse(r.text).error_code, 'validation_failed')
            assert.equal(h.backend.requests.length, 0)
            return
          }
          assert.equal(r.status, 200, r.text)
          assert.equal(h.backend.requests.length, 1)
          const target = h.backend.requests[0]!.target
          assert.equal(h.backend.requests[0]!.method, method)
          const m = /^\/passkeys\/([^/?]+)$/.exec(target)
          assert.ok(m, `backend target ${target} is one segment under /passkeys/`)
          const id = decodeURIComponent(m[1]!)
          assert.equal(id, decodeURIComponent(rawForUndici), 'the backend sees the id the client sent')
          assert.ok(id !== '.' && id !== '..' && !id.includes('/') && !id.includes('\\'))
        },
      ),
      { numRuns: 400 },
    )
  })

  test('benign ids are always accepted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/), async (id) => {
        h.backend.requests.length = 0
        const r = await send('DELETE', id)
        assert.equal(r.status, 200)
        assert.equal(h.backend.requests[0]!.target, '/passkeys/' + id)
      }),
      { numRuns: 100 },
    )
  })
})

describe('raw request targets cannot reach other backend paths', () => {
  let h: Harness
  let port: number
  before(async () => {
    h = await withFakeBackend()
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    port = (h.app.server.address() as AddressInfo).port
  })
  after(() => h.close())

  // Every backend path is a table template with each parameter one segment.
  const TEMPLATES = AUTH_ROUTES.map(
    (r) =>
      new RegExp(
        '^' +
          (r.backend?.path ?? r.path)
            .split(/\{\w+\}/)
            .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
            .join('([^/]+)') +
          '$',
      ),
  )
  const prefixes = [
    '/auth/passkeys/',
    '/auth/factors/',
    '/auth/user/identities/',
    '/auth/oauth/authorizations/',
    '/auth/',
    '/auth/user/',
    '/auth/../',
    '/auth/./',
    '/auth//',
    '//auth/',
    '/auth/%2e%2e/',
    '/auth%2F',
    '/auth/passkeys/x/',
    '/auth/%2E%2E%2F',
    '/auth/..%5C',
    '/auth/passkeys/%2e%2e%2f',
  ]
  const tails = [
    'admin/users',
    '..%2Fadmin%2Fusers',
    '%2e%2e/admin',
    '%252e%252e%252fadmin',
    '..\\admin',
    '%5C..%5Cadmin',
    'health/../admin',
    'a'.repeat(5000),
    '..;/admin',
    'user%00',
    'settings?x=/../admin',
    'invite',
    '%2e%2e%2f%2e%2e%2fadmin',
    'health%2f..%2fadmin',
  ]
  const methods = ['GET', 'PATCH', 'DELETE', 'POST']

  test('fuzzed request lines: every backend request is one of the mounted paths or a single /passkeys/<id>', async () => {
    let sent = 0
    for (const method of methods) {
      for (const p of prefixes) {
        for (const t of tails) {
          const target = p + t
          const body = method === 'GET' ? '' : '{"friendly_name":"x","email":"a@example.com","password":"secret123"}'
          await rawExchange(
            port,
            `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
            50,
          )
          sent++
        }
      }
    }
    // Absolute-form and overlong targets too.
    await rawExchange(
      port,
      `GET http://evil.example/auth/../admin/users HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      50,
    )
    await rawExchange(
      port,
      `GET /auth/${'%2e%2e/'.repeat(3000)}admin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      50,
    )
    assert.ok(sent > 500)
    assert.ok(
      h.backend.requests.some((r) => r.target.startsWith('/passkeys/')),
      'some fuzzed targets were legitimately forwarded',
    )
    for (const r of h.backend.requests) {
      const path = r.target.split('?')[0]!
      const m = TEMPLATES.map((t) => t.exec(path)).find((x) => x !== null)
      assert.ok(m, `unexpected backend target ${r.target}`)
      for (const segment of m.slice(1)) {
        const id = decodeURIComponent(segment!)
        assert.ok(id !== '..' && id !== '.' && !id.includes('/') && !id.includes('\\'), r.target)
      }
    }
  })

  test('the service still answers after hostile input, including a 10 MiB body', async () => {
    const big = Buffer.alloc(10 * 1024 * 1024, 'a')
    const raw = await rawExchange(
      port,
      Buffer.concat([
        Buffer.from(
          `POST /auth/signup HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n`,
        ),
        big,
      ]),
      300,
    )
    assert.match(raw.toString('latin1').split('\r\n')[0]!, /^HTTP\/1.1 413 /)
    const garbage = await rawExchange(port, Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a]), 100)
    assert.match(garbage.toString('latin1'), /^HTTP\/1.1 400 /)
    const health = await fetch(`http://127.0.0.1:${port}/auth/health`)
    assert.equal(health.status, 200)
  })
})
