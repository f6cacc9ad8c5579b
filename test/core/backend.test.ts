import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
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

describe("readiness's status probe (`status`) against `fetch` and `body.cancel()`, which it replaced", () => {
  /** The status each gives (`fetch`'s, or undefined where it throws), for one backend's answer. */
  async function both(
    answer: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void,
    timeoutMs = 300,
  ) {
    const heads: string[][] = []
    const backend = await startFakeBackend((req, res) => {
      heads.push(req.rawHeaders)
      answer(req, res)
    })
    const client = new SupabaseAuthClient({
      url: `${backend.url}/auth/v1`,
      apiKey: 'sb_publishable_k1',
      requestIdHeader: 'X-Request-Id',
      clientIpHeader: 'X-Real-IP',
      timeoutMs: 1000,
      connectTimeoutMs: 1000,
      connections: 4,
    })
    const health = client.resolve('/health')
    const given = { 'user-agent': 'authgate-readiness' }
    try {
      let fetched: number | undefined
      try {
        const res = await client.fetch(health, { headers: given, signal: AbortSignal.timeout(timeoutMs) })
        await res.body?.cancel()
        fetched = res.status
      } catch {
        fetched = undefined
      }
      const status = await client.status(health.pathname + health.search, given, timeoutMs)
      return { fetched, status, heads }
    } finally {
      await client.close()
      await backend.close()
    }
  }

  it('sends the same request, and gives the same status', async () => {
    for (const code of [200, 404, 503]) {
      const r = await both((_req, res) => res.writeHead(code, { 'content-type': 'text/plain' }).end('x'))
      assert.deepEqual([r.fetched, r.status], [code, code])
      assert.equal(r.heads.length, 2)
      assert.deepEqual(r.heads[1], r.heads[0])
      assert.deepEqual(r.heads[0]!.slice(4), [
        'user-agent',
        'authgate-readiness',
        'apikey',
        'sb_publishable_k1',
        'accept-encoding',
        'identity',
      ])
    }
  })

  it('a head that came counts, whatever its body then does; none before the timeout, no status', async () => {
    const stalled = await both((_req, res) => res.writeHead(200, { 'content-length': '10' }).write('12'))
    assert.deepEqual([stalled.fetched, stalled.status], [200, 200])
    const silent = await both(() => {})
    assert.deepEqual([silent.fetched, silent.status], [undefined, undefined])
    const cut = await both((req, res) => {
      res.writeHead(200, { 'content-length': '10' }).write('12')
      setTimeout(() => req.socket.destroy(), 20)
    })
    assert.deepEqual([cut.fetched, cut.status], [200, 200])
  })

  it('an informational head is not the answer: the final one counts, none after it alone', async () => {
    const hinted = await both((_req, res) => {
      res.writeEarlyHints({ link: '</x.css>; rel=preload' })
      res.writeHead(503).end()
    })
    assert.deepEqual([hinted.fetched, hinted.status], [503, 503])
    const hintedOnly = await both((req, res) => {
      res.writeEarlyHints({ link: '</x.css>; rel=preload' })
      setTimeout(() => req.socket.destroy(), 20)
    })
    assert.deepEqual([hintedOnly.fetched, hintedOnly.status], [undefined, undefined])
  })

  it('a body over 128 KiB is cut, announced or not, and the status still counts', async () => {
    for (const announced of [true, false]) {
      let closes = 0
      const r = await both((req, res) => {
        req.socket.on('close', () => closes++)
        res.writeHead(200, announced ? { 'content-length': String(200 * 1024) } : {})
        const chunk = Buffer.alloc(16 * 1024, 97)
        const more = () => {
          while (!res.destroyed && res.write(chunk));
        }
        res.on('drain', more)
        more()
      }, 2000)
      assert.deepEqual([r.fetched, r.status], [200, 200])
      await sleep(50)
      assert.equal(closes, 2, 'each cut its connection')
    }
  })

  it('a backend that refuses the connection gives no status', async () => {
    const backend = await startFakeBackend()
    const url = backend.url
    await backend.close()
    const client = new SupabaseAuthClient({ url, timeoutMs: 1000, connectTimeoutMs: 1000, connections: 1 })
    try {
      assert.equal(await client.status('/health', {}, 500), undefined)
    } finally {
      await client.close()
    }
  })
})
