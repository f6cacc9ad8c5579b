import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { MemorySessionStore } from '../../src/sessions/memory-store.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'
import { logCapture } from '../support/log-capture.ts'

/**
 * Answers authgate holds and reads (cookie sessions' session answers, a route's mend) from a
 * backend that compresses: one that gzips whenever the request allows it, and one that answers
 * brotli whatever it is asked. authgate must read them or refuse them; a session answer it cannot
 * read never reaches the page with its tokens.
 */

const KEY = { id: 'k1', key: randomBytes(32) }
const HOST = 'api.example.com'

const SESSION = JSON.stringify({
  access_token: 'header.eyJleHAiOjQxMDI0NDQ4MDB9.sig',
  refresh_token: 'refresh-1',
  token_type: 'bearer',
  expires_in: 3600,
  expires_at: 4102444800,
  user: { id: 'u1', email: 'a@example.com' },
})
const REGISTERED = JSON.stringify({ client_id: 'c1', client_secret: 's1', redirect_uris: ['https://app/cb'] })

type Encoder = (req: IncomingMessage) => { encoding: string; encode: (b: Buffer) => Buffer } | undefined

/** Gzips when the request's Accept-Encoding names gzip (what a compressing proxy in front of Supabase Auth does). */
const gzipWhenAsked: Encoder = (req) =>
  /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')) ? { encoding: 'gzip', encode: gzipSync } : undefined
/** Brotli whatever the request asks. */
const alwaysBrotli: Encoder = () => ({ encoding: 'br', encode: (b) => brotliCompressSync(b) })
/** An encoding nobody can read. */
const unreadable: Encoder = () => ({ encoding: 'x-private', encode: (b) => Buffer.concat([Buffer.from('XP'), b]) })
/** Says gzip, sends bytes that are not. */
const brokenGzip: Encoder = () => ({ encoding: 'gzip', encode: (b) => b })

function answering(encoder: Encoder) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0]
    const [status, text] = path === '/oauth/clients/register' ? [201, REGISTERED] : [200, SESSION]
    const how = encoder(req)
    const body = Buffer.from(text)
    if (how === undefined) {
      res.writeHead(status, { 'content-type': 'application/json' })
      return void res.end(body)
    }
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-encoding': how.encoding,
      vary: 'Accept-Encoding',
    })
    res.end(how.encode(body))
  }
}

describe('answers authgate reads, from a backend that compresses', () => {
  let backend: FakeBackend
  let app: FastifyInstance
  const logs = logCapture()

  before(async () => {
    backend = await startFakeBackend()
    app = await buildApp({
      rateLimit: false,
      logger: { stream: logs.stream },
      config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
      sessions: { mode: 'on', keys: [KEY], allowedOrigins: ['https://app.example.com'] },
      sessionStore: new MemorySessionStore(),
    })
    await app.ready()
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  const signIn = (acceptEncoding: string) =>
    app.inject({
      method: 'POST',
      url: '/auth/token?grant_type=password',
      headers: { 'content-type': 'application/json', host: HOST, 'accept-encoding': acceptEncoding },
      payload: '{"email":"a@example.com","password":"secret123"}',
    })
  const register = (acceptEncoding: string) =>
    app.inject({
      method: 'POST',
      url: '/auth/oauth/clients/register',
      headers: { 'content-type': 'application/json', host: HOST, 'accept-encoding': acceptEncoding },
      payload: '{"client_name":"x","redirect_uris":["https://app/cb"]}',
    })

  /** What the page reads: a compressed body as the browser would decode it. */
  const pageText = (res: LightMyRequestResponse) => {
    const encoding = res.headers['content-encoding']
    if (encoding === 'gzip') return gunzipSync(res.rawPayload).toString()
    if (encoding === 'br') return brotliDecompressSync(res.rawPayload).toString()
    return res.body
  }
  const noTokens = (body: string) => {
    assert.ok(!body.includes('header.eyJ'), 'the access token reached the page')
    assert.ok(!body.includes('refresh-1'), 'the refresh token reached the page')
  }

  for (const [name, encoder] of [
    ['gzips when asked', gzipWhenAsked],
    ['always answers brotli', alwaysBrotli],
  ] as const) {
    it(`a backend that ${name}: the session answer becomes a cookie, the page gets no token`, async () => {
      backend.handler = answering(encoder)
      const res = await signIn('gzip, deflate, br')
      assert.equal(res.statusCode, 200, res.body)
      noTokens(pageText(res))
      assert.match(String(res.headers['set-cookie']), /^__Host-authgate-session=|authgate/)
      assert.equal(res.headers['content-encoding'], undefined)
      assert.equal(res.json().user.id, 'u1')
    })

    it(`a backend that ${name}: the registration answer is mended`, async () => {
      backend.handler = answering(encoder)
      const res = await register('gzip, br')
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.headers['content-encoding'], undefined)
      assert.deepEqual(res.json(), { ...JSON.parse(REGISTERED), client_secret_expires_at: 0 })
    })
  }

  it('a held answer is asked for without compression, whatever the page accepts', async () => {
    backend.handler = answering(gzipWhenAsked)
    backend.requests.length = 0
    await signIn('gzip')
    await register('gzip')
    assert.equal(backend.requests.length, 2)
    for (const r of backend.requests) assert.equal(r.headers['accept-encoding'], 'identity')
  })

  for (const [name, encoder] of [
    ['an encoding authgate cannot read', unreadable],
    ['a gzip header over bytes that are not gzip', brokenGzip],
  ] as const) {
    it(`${name}: a session route fails closed, 502 in our shape, a log line says why`, async () => {
      backend.handler = answering(encoder)
      const before = logs.lines.length
      const res = await signIn('gzip')
      noTokens(pageText(res))
      assert.equal(res.statusCode, 502)
      assert.equal(res.headers['set-cookie'], undefined)
      assert.equal(res.json().error_code, 'backend_unreadable')
      const line = logs.lines.slice(before).find((l) => l.msg === 'backend answer could not be read')
      assert.ok(line, 'no log line for the unreadable answer')
    })
  }
})
