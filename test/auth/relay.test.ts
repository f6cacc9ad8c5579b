import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:net'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { rawExchange, splitResponse } from '../support/raw-http.ts'

/**
 * A backend that writes exact bytes, so the test knows byte for byte what Supabase Auth "sent",
 * and records the request heads it received.
 */
async function scriptedBackend(response: () => Buffer) {
  const received: string[] = []
  const server: Server = createServer((socket) => {
    let buf = Buffer.alloc(0)
    socket.on('data', (c) => {
      buf = Buffer.concat([buf, c])
      const end = buf.indexOf('\r\n\r\n')
      if (end === -1) return
      const head = buf.subarray(0, end).toString('latin1')
      const len = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0)
      if (buf.length < end + 4 + len) return
      // Readiness probes the backend on its own schedule: not a request of the test's.
      if (!/\r\nuser-agent: authgate-readiness\r\n/i.test(head + '\r\n'))
        received.push(buf.subarray(0, end + 4 + len).toString('latin1'))
      buf = buf.subarray(end + 4 + len)
      socket.write(response())
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    port: (server.address() as AddressInfo).port,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding'])
const endToEnd = (lines: string[]) => lines.filter((l) => !HOP.has(l.slice(0, l.indexOf(':')).toLowerCase()))

function backendBytes(status: number, reason: string, body: string): Buffer {
  const b = Buffer.from(body)
  const head =
    `HTTP/1.1 ${status} ${reason}\r\n` +
    'Location: http://localhost:3000/cb?code=a%2Fb&state=x%20y#access_token=t&sb=\r\n' +
    'Set-Cookie: first=1; Path=/; HttpOnly\r\n' +
    'X-Repeated: one\r\n' +
    'set-cookie: second=2; Path=/auth; Secure\r\n' +
    'X-Repeated: two\r\n' +
    'Content-Type: text/html; charset=utf-8\r\n' +
    'Date: Sun, 22 Nov 2026 10:00:00 GMT\r\n' +
    'Connection: keep-alive\r\n' +
    `Content-Length: ${b.length}\r\n\r\n`
  return Buffer.concat([Buffer.from(head, 'latin1'), b])
}

const RELAYS: Array<[string, string, string]> = [
  [
    'GET',
    '/auth/authorize?provider=github&redirect_to=http%3A%2F%2Flocalhost%3A3000&scopes=repo%20gist&x=%ZZ',
    '/authorize?provider=github&redirect_to=http%3A%2F%2Flocalhost%3A3000&scopes=repo%20gist&x=%ZZ',
  ],
  ['GET', '/auth/callback?code=abc&state=8f2c9a52', '/callback?code=abc&state=8f2c9a52'],
  [
    'GET',
    '/auth/verify?token=pkce_abc&type=signup&redirect_to=http://localhost:3000/',
    '/verify?token=pkce_abc&type=signup&redirect_to=http://localhost:3000/',
  ],
  [
    'GET',
    '/auth/oauth/authorize?client_id=c&redirect_uri=http%3A%2F%2Flocalhost%2Fcb&code_challenge=abc&code_challenge_method=S256&state=s',
    '/oauth/authorize?client_id=c&redirect_uri=http%3A%2F%2Flocalhost%2Fcb&code_challenge=abc&code_challenge_method=S256&state=s',
  ],
]

describe('redirect routes relay byte for byte', () => {
  let app: FastifyInstance
  let backend: Awaited<ReturnType<typeof scriptedBackend>>
  let port: number
  let status = 302
  before(async () => {
    backend = await scriptedBackend(() =>
      backendBytes(
        status,
        status === 302 ? 'Found' : 'See Other',
        `<a href="http://localhost:3000/cb">${status}</a>.\n`,
      ),
    )
    app = await buildApp({ config: { backendUrl: parseBackendUrl('t', `http://127.0.0.1:${backend.port}`) } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as AddressInfo).port
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  for (const s of [302, 303]) {
    // /oauth/authorize's redirect to the client gets `iss` (RFC 9207; test/auth/oauth-conformance.test.ts).
    for (const [method, url, target] of RELAYS.filter(([, u]) => !u.startsWith('/auth/oauth/'))) {
      for (const accept of ['*/*', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8']) {
        test(`${s} ${method} ${url.split('?')[0]} (Accept: ${accept.slice(0, 9)}): same bytes, query unchanged, redirect not followed`, async () => {
          status = s
          const before = backend.received.length
          const raw = await rawExchange(
            port,
            `${method} ${url} HTTP/1.1\r\nHost: localhost\r\nAccept: ${accept}\r\nConnection: close\r\n\r\n`,
          )
          const sent = splitResponse(backendBytes(s, '', `<a href="http://localhost:3000/cb">${s}</a>.\n`))
          const got = splitResponse(raw)
          assert.match(got.statusLine, new RegExp(`^HTTP/1.1 ${s} `))
          // The backend's headers, in order, then authgate's request id (appended: the backend sent none).
          const relayed = endToEnd(got.headerLines)
          assert.match(relayed.at(-1)!, /^x-request-id: [0-9a-f-]{36}$/)
          assert.deepEqual(relayed.slice(0, -1), endToEnd(sent.headerLines))
          assert.ok(got.body.equals(sent.body))
          assert.equal(backend.received.length, before + 1, 'exactly one backend request: the redirect is not followed')
          assert.ok(
            backend.received.at(-1)!.startsWith(`${method} ${target} HTTP/1.1\r\n`),
            backend.received.at(-1)!.split('\r\n')[0],
          )
        })
      }
    }
  }

  test('POST /callback forwards its form body as is', async () => {
    status = 302
    const form = 'state=8f2c9a52&code=abc&user=%7B%22name%22%3A%7B%22firstName%22%3A%22A%22%7D%7D'
    await rawExchange(
      port,
      `POST /auth/callback HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\nConnection: close\r\n\r\n${form}`,
    )
    const req = backend.received.at(-1)!
    assert.ok(req.startsWith('POST /callback HTTP/1.1\r\n'))
    assert.ok(req.endsWith('\r\n\r\n' + form))
    assert.match(req, /\r\ncontent-type: application\/x-www-form-urlencoded\r\n/i)
  })

  test('GET /verify and POST /verify stay separate routes', async () => {
    const before = backend.received.length
    const bad = await app.inject({
      method: 'POST',
      url: '/auth/verify',
      payload: '{}',
      headers: { 'content-type': 'application/json' },
    })
    assert.equal(bad.statusCode, 400, 'POST /verify is typed: validated')
    assert.equal(backend.received.length, before)
  })
})

describe('relay routes with the backend down', () => {
  test('each relay route answers 502 in the error shape', async () => {
    const s = createServer()
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
    const port = (s.address() as AddressInfo).port
    await new Promise<void>((r) => s.close(() => r()))
    const app = await buildApp({ config: { backendUrl: parseBackendUrl('t', `http://127.0.0.1:${port}`) } })
    try {
      for (const [method, url] of [...RELAYS.map(([m, u]) => [m, u] as const), ['POST', '/auth/callback'] as const]) {
        const res = await app.inject({
          method: method as 'GET',
          url,
          headers: { accept: 'text/html' },
          ...(method === 'POST'
            ? { payload: 'state=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }
            : {}),
        })
        assert.equal(res.statusCode, 502, url)
        assert.equal(res.json().error_code, 'backend_unreachable')
      }
    } finally {
      await app.close()
    }
  })
})
