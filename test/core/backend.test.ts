import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { AuthgateConfigError } from '../../src/config.ts'
import { knownToUndici, normaliseBackendUrl, Pool, requestThrough, SupabaseAuthClient } from '../../src/core/backend.ts'
import { defineRoute } from '../../src/routes-dsl/index.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'
import { ISSUER, makeKey, sign, type SigningKey } from '../protect/support.ts'

describe('one connection to Supabase Auth', () => {
  let key: SigningKey
  let backend: FakeBackend
  let app: FastifyInstance

  before(async () => {
    key = await makeKey()
    backend = await startFakeBackend((req, res) => {
      if (req.url === '/auth/v1/.well-known/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(JSON.stringify({ keys: [key.publicJwk] }))
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"id":"u1"}')
    })
    app = await buildApp({
      rateLimit: false,
      // Given from code with a trailing slash: the same backend as without it, for every part.
      config: { backendUrl: new URL(`${backend.url}/auth/v1/`), backendApiKey: 'sb_publishable_k1' },
      protect: { issuer: ISSUER, sessionCheck: true },
    })
    app.route(
      defineRoute({ method: 'GET', url: '/live', auth: { session: true }, handler: async () => ({ ok: true }) }),
    )
    await app.ready()
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  it('forwarding, readiness, the key set and the session check ask the same base path, each with the apikey', async () => {
    assert.equal((await app.inject({ method: 'GET', url: '/auth/settings' })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    const token = await sign(key)
    const live = await app.inject({ method: 'GET', url: '/live', headers: { authorization: `Bearer ${token}` } })
    assert.equal(live.statusCode, 200, live.body)

    const all = [...backend.requests, ...backend.probes]
    const seen = all.map((r) => r.target.split('?')[0])
    assert.deepEqual([...new Set(seen)].sort(), [
      '/auth/v1/.well-known/jwks.json',
      '/auth/v1/health',
      '/auth/v1/settings',
      '/auth/v1/user',
    ])
    for (const r of all) assert.equal(r.headers.apikey, 'sb_publishable_k1', `${r.target} carries the apikey`)
  })
})

describe('backend URL', () => {
  it('is normalised once: a trailing slash names the same backend', () => {
    assert.equal(normaliseBackendUrl('x', 'http://h:1/auth/v1/').href, 'http://h:1/auth/v1')
    assert.equal(normaliseBackendUrl('x', new URL('http://h:1/auth/v1//')).href, 'http://h:1/auth/v1')
    const client = new SupabaseAuthClient({
      url: 'http://h:1/auth/v1/',
      timeoutMs: 1000,
      connectTimeoutMs: 1000,
      connections: 1,
    })
    assert.equal(client.resolve('/health').href, 'http://h:1/auth/v1/health')
    void client.close()
  })

  it('bad values given from code are refused with the option named, as from the environment', async () => {
    for (const [config, option] of [
      [{ backendUrl: 'ftp://h' }, 'backendUrl'],
      [{ backendUrl: 'http://u:p@h' }, 'backendUrl'],
      [{ prefix: 'auth' }, 'prefix'],
      [{ backendTimeoutMs: -1 }, 'backendTimeoutMs'],
      [{ corsOrigins: ['https://a.example/path'] }, 'corsOrigins'],
      [{ requestIdHeader: 'bad header' }, 'requestIdHeader'],
      [{ readinessPath: '/livez' }, 'readinessPath'],
    ] as const) {
      await assert.rejects(
        buildApp({ config: config as never }),
        (err: unknown) => err instanceof AuthgateConfigError && err.option === option,
        JSON.stringify(config),
      )
    }
  })
})

describe('the backend client’s fetch', () => {
  it('uses undici’s own pool and request API, loaded by their modules', async () => {
    const undici = await import('undici')
    assert.equal(Pool, undici.Pool)
    assert.equal(requestThrough, undici.Dispatcher.prototype.request)
  })

  it('answers status, text, json and a cancellable body; headers given as an object or a Headers; the signal aborts', async () => {
    const seen: Array<Record<string, string | string[] | undefined>> = []
    const backend = await startFakeBackend((req, res) => {
      seen.push(req.headers)
      if (req.url === '/slow') return // never answers
      if (req.url === '/moved') {
        res.writeHead(302, { location: '/elsewhere' })
        return res.end()
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"ok":true}')
    })
    const client = new SupabaseAuthClient({
      url: backend.url,
      apiKey: 'k1',
      timeoutMs: 5000,
      connectTimeoutMs: 5000,
      connections: 2,
    })
    try {
      const json = await client.fetch(client.resolve('/x?y=1'), { headers: { 'X-One': '1', apikey: 'client' } })
      assert.equal(json.status, 200)
      assert.deepEqual(await json.json(), { ok: true })
      const text = await client.fetch(client.resolve('/x'), { headers: new Headers({ 'x-two': '2' }) })
      assert.equal(await text.text(), '{"ok":true}')
      assert.equal(seen[0]!['x-one'], '1')
      assert.equal(seen[0]!.apikey, 'k1', 'the configured apikey replaces the caller’s')
      assert.equal(seen[1]!['x-two'], '2')
      const moved = await client.fetch(client.resolve('/moved'))
      assert.equal(moved.status, 302, 'a redirect is reported, not followed')
      await moved.body!.cancel()
      await assert.rejects(
        client.fetch(client.resolve('/slow'), { signal: AbortSignal.timeout(50) }),
        (err: Error) => err.name === 'TimeoutError',
      )
    } finally {
      await client.close()
      await backend.close()
    }
  })
})

describe('the backend client’s status probe', () => {
  it('sends what fetch sends, reads and drops the body, and answers the status however the body ends', async () => {
    // A raw server: the request's bytes as sent, and when the connection closes.
    const { createServer } = await import('node:net')
    const seen: string[] = []
    const server = createServer((socket) => {
      socket.on('data', (d) => {
        const head = d.toString('latin1')
        seen.push(head)
        const path = head.slice(4, head.indexOf(' ', 4))
        if (path.endsWith('/never')) return
        if (path.endsWith('/hold'))
          return void setTimeout(() => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'), 300)
        if (path.endsWith('/big')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 200000\r\n\r\n')
        else if (path.endsWith('/endless'))
          socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n')
        else if (path.endsWith('/early')) socket.write('HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n')
        else socket.write('HTTP/1.1 503 Down\r\ncontent-length: 4\r\n\r\ndown')
      })
      socket.on('close', () => seen.push('closed'))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/auth/v1`
    const client = new SupabaseAuthClient({
      url,
      apiKey: 'k1',
      requestIdHeader: 'X-Request-Id',
      clientIpHeader: 'sb-forwarded-for',
      timeoutMs: 5000,
      connectTimeoutMs: 5000,
      connections: 1,
    })
    const drained = () => new Promise((resolve) => setTimeout(resolve, 50))
    try {
      const viaFetch = await client.fetch(client.resolve('/health'), { headers: { 'user-agent': 'probe' } })
      await viaFetch.body!.cancel()
      await drained()
      assert.equal(await client.status('/auth/v1/health', 'probe', 1000), 503)
      await drained()
      const [fetched, probed] = seen.splice(0)
      assert.equal(probed, fetched, 'the same bytes as fetch, on the same connection')
      assert.match(
        probed!,
        /^GET \/auth\/v1\/health HTTP\/1\.1\r\n.*user-agent: probe\r\napikey: k1\r\naccept-encoding: /s,
      )
      // The same probe again, on its kept request: the same bytes.
      assert.equal(await client.status('/auth/v1/health', 'probe', 1000), 503)
      await drained()
      assert.deepEqual(seen.splice(0), [probed])
      // A body over 128 KiB is not read: the connection is closed, the status stands.
      assert.equal(await client.status('/auth/v1/big', 'probe', 1000), 200)
      await drained()
      assert.deepEqual(seen.splice(0).slice(1), ['closed'])
      // A body that does not end is cut at the time limit; the status stands.
      const started = Date.now()
      assert.equal(await client.status('/auth/v1/endless', 'probe', 200), 200)
      assert.ok(Date.now() - started >= 150, 'waited for the body until the time limit')
      await drained()
      assert.deepEqual(seen.splice(0).slice(1), ['closed'])
      // No answer (or only an informational one) by the time limit: rejected, the connection closed.
      await assert.rejects(client.status('/auth/v1/never', 'probe', 100))
      await assert.rejects(client.status('/auth/v1/early', 'probe', 100))
      await drained()
      assert.deepEqual(
        seen.splice(0).filter((s) => s === 'closed'),
        ['closed', 'closed'],
      )
      // Waiting for the one connection past the time limit: cut when undici starts it, before it is
      // sent, as fetch's signal does; the probe ends then, not at the limit.
      const held = (hold: Promise<unknown>, probe: () => Promise<unknown>) =>
        Promise.all([
          hold,
          (async () => {
            const started = Date.now()
            await assert.rejects(probe())
            return Date.now() - started
          })(),
        ])
      const [, viaSignal] = await held(client.fetch(client.resolve('/hold')), () =>
        client.fetch(client.resolve('/health'), { signal: AbortSignal.timeout(100) }),
      )
      const [, viaStatus] = await held(client.fetch(client.resolve('/hold')), () =>
        client.status('/auth/v1/health', 'probe', 100),
      )
      assert.ok(viaSignal >= 250 && viaStatus >= 250, `${viaSignal} and ${viaStatus} ms`)
      await drained()
      assert.deepEqual(
        seen.splice(0).map((s) => (s === 'closed' ? s : s.slice(0, s.indexOf(' HTTP/')))),
        ['GET /auth/v1/hold', 'closed', 'GET /auth/v1/hold', 'closed'],
      )
    } finally {
      await client.close()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('what the service loads', () => {
  it('neither undici’s index (fetch, WebSocket, mocks) nor Node.js’s bundled copy of undici', async () => {
    const { execFileSync } = await import('node:child_process')
    const script = `
      const { buildApp } = await import(${JSON.stringify(new URL('../../src/app.ts', import.meta.url).href)})
      const app = await buildApp({ logger: false, processMetrics: true, refuseEarly: true })
      await app.ready()
      const { createRequire } = await import('node:module')
      const index = createRequire(import.meta.url).resolve('undici')
      console.log(JSON.stringify({
        bundled: process.moduleLoadList.some((m) => m.includes('deps/undici')),
        index: Object.keys((await import('node:module')).createRequire(import.meta.url).cache).includes(index),
      }))
      await app.close()
    `
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url),
      encoding: 'utf8',
    })
    assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)!), { bundled: false, index: false })
  })
})

describe("authgate's header names among undici's well-known ones", () => {
  it('are sent as they are, and a name that is no lower-case token is still judged by undici', async () => {
    const seen: string[][] = []
    const backend = await startFakeBackend((req, res) => {
      seen.push(req.rawHeaders)
      res.end('{}')
    })
    knownToUndici(['x-authgate-test-id', 'x-authgate-test bad', 'X-Authgate-Test-Upper'])
    const pool = new Pool(backend.url)
    try {
      const send = (headers: string[]) =>
        requestThrough.call(pool, { method: 'GET', path: '/', headers }).then(async (r) => {
          await r.body.dump()
          return r.statusCode
        })
      assert.equal(await send(['x-authgate-test-id', 'a', 'X-Authgate-Test-Upper', 'b']), 200)
      assert.deepEqual(seen.at(-1)!.slice(-4), ['x-authgate-test-id', 'a', 'X-Authgate-Test-Upper', 'b'])
      await assert.rejects(send(['x-authgate-test bad', 'c']), /invalid header key/)
      await assert.rejects(send(['x-authgate-test-id', 'bad\r\nvalue']), /invalid x-authgate-test-id header/)
    } finally {
      await pool.close()
      await backend.close()
    }
  })
})
