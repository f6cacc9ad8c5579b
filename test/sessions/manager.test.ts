import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, beforeEach, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import { SupabaseAuthClient } from '../../src/core/backend.ts'
import { AuthgateError } from '../../src/errors.ts'
import { resolveSessionConfig } from '../../src/sessions/config.ts'
import { SessionCipher } from '../../src/sessions/crypto.ts'
import { CookieSessions } from '../../src/sessions/manager.ts'
import { MemorySessionStore } from '../../src/sessions/memory-store.ts'
import type { SessionStore } from '../../src/sessions/store.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'

const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger
const KEY = { id: 'k1', key: randomBytes(32) }

function sessionAnswer(n: number, expiresAt: number) {
  return JSON.stringify({
    access_token: `access-${n}`,
    refresh_token: `refresh-${n}`,
    token_type: 'bearer',
    expires_in: 60,
    expires_at: expiresAt,
    user: { id: 'u1', n },
  })
}

describe('CookieSessions', () => {
  let fake: FakeBackend
  let backend: SupabaseAuthClient
  let now: number
  let issued: number
  const context = { clientIp: '203.0.113.9', requestId: 'req-1' }

  before(async () => {
    fake = await startFakeBackend()
    backend = new SupabaseAuthClient({
      url: fake.url,
      timeoutMs: 2000,
      connectTimeoutMs: 2000,
      connections: 4,
      requestIdHeader: 'x-request-id',
    })
  })
  after(async () => {
    await backend.close()
    await fake.close()
  })
  beforeEach(() => {
    fake.requests.length = 0
    now = 1_700_000_000_000
    issued = 1
    // Each refresh answers the next pair of tokens, 60 s from the test's clock; a little late.
    fake.handler = (_req, res) => {
      setTimeout(() => {
        issued++
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(sessionAnswer(issued, Math.floor(now / 1000) + 60))
      }, 30)
    }
  })

  const make = (store: SessionStore = new MemorySessionStore({ now: () => now }), keys = [KEY]) =>
    new CookieSessions({
      config: resolveSessionConfig({ keys, lifetimeMs: 3600_000, idleTimeoutMs: 600_000 }),
      store,
      backend,
      log,
      now: () => now,
    })
  const tokens = (expiresAt = Math.floor(now / 1000) + 60) => ({
    accessToken: 'access-1',
    refreshToken: 'refresh-1',
    expiresAt,
    user: { id: 'u1' },
  })

  it('stores a session encrypted, under the hash of its id, and finds it by the id', async () => {
    const store = new MemorySessionStore({ now: () => now })
    const sessions = make(store)
    const created = await sessions.create(tokens())
    assert.match(created.id, /^[A-Za-z0-9_-]{43}$/)
    const sealed = await store.get(created.handle)
    assert.ok(sealed && !sealed.includes('access-1'))
    assert.equal(await store.get(created.id), undefined)
    const loaded = await sessions.load(created.id)
    assert.equal(loaded?.session.accessToken, 'access-1')
    assert.equal(loaded?.session.endsAt, now + 3600_000)
    assert.match(sessions.cookie(created), /Max-Age=3600;/)
    assert.match(sessions.clearedCookie(), /Max-Age=0/)
  })

  it('a fresh token is used as it is; no refresh', async () => {
    const sessions = make()
    const created = await sessions.create(tokens())
    now += 30_000
    const used = await sessions.use(created.id, context)
    assert.equal(used?.session.accessToken, 'access-1')
    assert.equal(fake.requests.length, 0)
    assert.equal(await sessions.use('x'.repeat(43), context), undefined)
  })

  it('an expiring token: 10 concurrent uses make one refresh, carried like a forwarded request', async () => {
    const sessions = make()
    const created = await sessions.create(tokens())
    now += 50_000 // 10 s left of 60: due (a quarter of the lifetime)
    const used = await Promise.all(Array.from({ length: 10 }, () => sessions.use(created.id, context)))
    assert.deepEqual(new Set(used.map((u) => u?.session.accessToken)), new Set(['access-2']))
    assert.equal(fake.requests.length, 1)
    assert.equal(sessions.refreshes, 1)
    const [request] = fake.requests
    assert.equal(request!.method, 'POST')
    assert.equal(request!.target, '/token?grant_type=refresh_token')
    assert.deepEqual(JSON.parse(request!.body.toString()), { refresh_token: 'refresh-1' })
    assert.equal(request!.headers['x-forwarded-for'], '203.0.113.9')
    assert.equal(request!.headers['x-request-id'], 'req-1')
    // Stored: the next use needs no refresh.
    assert.equal((await sessions.use(created.id, context))?.session.refreshToken, 'refresh-2')
    assert.equal(fake.requests.length, 1)
  })

  it('two replicas on one store: one refresh; the other waits for the new record', async () => {
    const store = new MemorySessionStore({ now: () => now })
    const a = make(store)
    const b = make(store)
    const created = await a.create(tokens())
    now += 59_000
    const used = await Promise.all([
      ...Array.from({ length: 5 }, () => a.use(created.id, context)),
      ...Array.from({ length: 5 }, () => b.use(created.id, context)),
    ])
    assert.deepEqual(new Set(used.map((u) => u?.session.accessToken)), new Set(['access-2']))
    assert.equal(fake.requests.length, 1)
    assert.equal(a.refreshes + b.refreshes, 1)
  })

  it('a refresh Supabase Auth refuses ends the session here', async () => {
    const store = new MemorySessionStore({ now: () => now })
    const sessions = make(store)
    const created = await sessions.create(tokens())
    fake.handler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end('{"code":400,"error_code":"refresh_token_already_used","msg":"Invalid Refresh Token"}')
    }
    now += 61_000
    assert.equal(await sessions.use(created.id, context), undefined)
    assert.equal(await store.get(created.handle), undefined)
    fake.handler = (_req, res) => res.writeHead(401).end('not json')
    const other = await sessions.create(tokens())
    now += 61_000
    assert.equal(await sessions.use(other.id, context), undefined)
  })

  it('a refresh that fails otherwise is an error in our terms; the session stays', async () => {
    const sessions = make()
    const created = await sessions.create(tokens())
    now += 61_000
    for (const [status, code] of [
      [500, 'backend_unreachable'],
      [429, 'over_request_rate_limit'],
    ] as const) {
      fake.handler = (_req, res) => res.writeHead(status).end()
      await assert.rejects(
        sessions.use(created.id, context),
        (err: unknown) => err instanceof AuthgateError && err.code === code,
      )
    }
    fake.handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    await assert.rejects(
      sessions.use(created.id, context),
      (err: unknown) => (err as AuthgateError).code === 'unexpected_failure',
    )
    fake.handler = (req) => req.socket.destroy()
    await assert.rejects(
      sessions.use(created.id, context),
      (err: unknown) => (err as AuthgateError).code === 'backend_unreachable',
    )
    assert.ok(await sessions.load(created.id))
  })

  it('a refresh answered in gzip or brotli is read; one in a coding authgate cannot read fails closed', async () => {
    const sessions = make()
    const created = await sessions.create(tokens())
    for (const [encoding, encode] of [
      ['gzip', gzipSync],
      ['br', brotliCompressSync],
    ] as const) {
      now += 61_000
      fake.handler = (req, res) => {
        issued++
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding })
        res.end(encode(Buffer.from(sessionAnswer(issued, Math.floor(now / 1000) + 60))))
      }
      fake.requests.length = 0
      const used = await sessions.use(created.id, context)
      assert.equal(used?.session.accessToken, `access-${issued}`)
      assert.equal(fake.requests[0]!.headers['accept-encoding'], 'identity')
    }
    now += 61_000
    fake.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'x-private' })
      res.end(sessionAnswer(99, Math.floor(now / 1000) + 60))
    }
    await assert.rejects(
      sessions.use(created.id, context),
      (err: unknown) => err instanceof AuthgateError && err.code === 'backend_unreadable',
    )
    // Nothing of the unread answer was kept.
    assert.notEqual((await sessions.load(created.id))?.session.refreshToken, 'refresh-99')
  })

  it('a refresh that times out is request_timeout', async () => {
    const slow = new SupabaseAuthClient({ url: fake.url, timeoutMs: 50, connectTimeoutMs: 1000, connections: 1 })
    try {
      const sessions = new CookieSessions({
        config: resolveSessionConfig({ keys: [KEY] }),
        store: new MemorySessionStore({ now: () => now }),
        backend: slow,
        log,
        now: () => now,
      })
      const created = await sessions.create(tokens())
      now += 61_000
      fake.handler = (_req, res) => setTimeout(() => res.writeHead(500).end(), 500)
      await assert.rejects(
        sessions.use(created.id, context),
        (err: unknown) => (err as AuthgateError).code === 'request_timeout',
      )
    } finally {
      await slow.close()
    }
  })

  it('ends at its lifetime, whatever its use', async () => {
    const sessions = make()
    const created = await sessions.create(tokens(Math.floor(now / 1000) + 7200))
    now += 3600_000
    assert.equal(await sessions.load(created.id), undefined)
  })

  it('a record sealed with a rotated-out key is dropped; with an older listed key, sealed again', async () => {
    const store = new MemorySessionStore({ now: () => now })
    const old = make(store, [KEY])
    const created = await old.create(tokens())
    const NEW = { id: 'k2', key: randomBytes(32) }
    const rotated = make(store, [NEW, KEY])
    assert.equal((await rotated.load(created.id))?.session.accessToken, 'access-1')
    assert.equal(new SessionCipher([NEW]).isCurrent((await store.get(created.handle))!), true)
    const dropped = await old.create(tokens())
    assert.equal(await make(store, [NEW]).load(dropped.id), undefined)
    assert.equal(await store.get(dropped.handle), undefined)
  })

  it('a store that fails is session_store_unavailable', async () => {
    const broken = new MemorySessionStore()
    broken.get = async () => {
      throw new Error('connection lost')
    }
    const sessions = make(broken)
    await assert.rejects(
      sessions.load('x'.repeat(43)),
      (err: unknown) => err instanceof AuthgateError && err.code === 'session_store_unavailable' && err.status === 503,
    )
  })

  it('touches a session in use at most once a minute', async () => {
    const store = new MemorySessionStore({ now: () => now })
    let touches = 0
    const touch = store.touch.bind(store)
    store.touch = async (h, ttl) => {
      touches++
      return touch(h, ttl)
    }
    const sessions = make(store)
    const created = await sessions.create(tokens(Math.floor(now / 1000) + 3600))
    await sessions.use(created.id, context)
    await sessions.use(created.id, context)
    assert.equal(touches, 1)
    now += 60_000
    await sessions.use(created.id, context)
    assert.equal(touches, 2)
  })

  it('a refresh Supabase Auth answers late keeps its lock: the other replica waits and never presents the same token', async () => {
    const store = new MemorySessionStore({ now: () => now })
    const ttls: number[] = []
    const lock = store.lock.bind(store)
    store.lock = async (handle, ttl) => {
      ttls.push(ttl)
      return lock(handle, ttl)
    }
    const replica = () =>
      new CookieSessions({
        config: resolveSessionConfig({ keys: [KEY], lifetimeMs: 3600_000, idleTimeoutMs: 600_000 }),
        store,
        backend,
        log,
        now: () => now,
        lockRenewMs: 10,
      })
    const [a, b] = [replica(), replica()]
    // Longer than the backend's timeout: the lock cannot lapse under a refresh still in flight.
    assert.equal(a.lockMs, backend.options.timeoutMs + 5000)
    const created = await a.create(tokens())
    now += 61_000
    let answer!: () => void
    const arrived = new Promise<void>((resolve) => {
      fake.handler = (_req, res) => {
        answer = () => {
          issued++
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(sessionAnswer(issued, Math.floor(now / 1000) + 60))
        }
        resolve()
      }
    })
    const first = a.use(created.id, context)
    await arrived
    // The answer is late: the clock passes the lock's own time to live twice over, in steps
    // shorter than it, while the holder renews it.
    const start = now
    while (now - start < 2 * a.lockMs) {
      now += a.lockMs / 2
      await sleep(40)
    }
    const second = b.use(created.id, context)
    await sleep(120)
    assert.equal(fake.requests.length, 1, 'the second replica did not refresh')
    answer()
    const [x, y] = await Promise.all([first, second])
    assert.equal(x?.session.accessToken, 'access-2')
    assert.equal(y?.session.accessToken, 'access-2')
    assert.equal(fake.requests.length, 1)
    assert.equal(a.refreshes + b.refreshes, 1)
    // Every attempt (the waiting replica tries again between looks at the record) asks as long.
    assert.ok(ttls.length > 1 && ttls.every((ttl) => ttl === a.lockMs), String(ttls))
  })

  it('revalidation: past AUTHGATE_SESSION_REVALIDATE, one GET /user for concurrent uses; the user kept up to date', async () => {
    const sessions = make()
    const created = await sessions.create(tokens(Math.floor(now / 1000) + 3600))
    fake.handler = (req, res) => {
      assert.equal(req.url, '/user')
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ id: 'u1', email: 'new@example.com' }))
      }, 30)
    }
    // Signed in just now: confirmed by the sign-in itself.
    await sessions.use(created.id, context, { revalidate: true })
    assert.equal(fake.requests.length, 0)
    now += 60_000
    // A use that relies on Supabase Auth's own answer (a mounted route) does not ask.
    await sessions.use(created.id, context)
    assert.equal(fake.requests.length, 0)
    const used = await Promise.all(
      Array.from({ length: 5 }, () => sessions.use(created.id, context, { revalidate: true })),
    )
    assert.equal(fake.requests.length, 1)
    assert.equal(sessions.revalidations, 1)
    assert.equal(fake.requests[0]!.headers.authorization, 'Bearer access-1')
    assert.equal(fake.requests[0]!.headers['x-request-id'], 'req-1')
    for (const u of used) assert.deepEqual(u?.session.user, { id: 'u1', email: 'new@example.com' })
    now += 59_000
    await sessions.use(created.id, context, { revalidate: true })
    assert.equal(fake.requests.length, 1, 'confirmed a minute ago at most: not asked again')
    assert.deepEqual((await sessions.load(created.id))?.session.user, { id: 'u1', email: 'new@example.com' })
  })

  it('revalidation: a session Supabase Auth no longer knows ends here; a failure to ask is an error', async () => {
    const store = new MemorySessionStore({ now: () => now })
    const sessions = make(store)
    const created = await sessions.create(tokens(Math.floor(now / 1000) + 3600))
    now += 61_000
    fake.handler = (_req, res) => res.writeHead(503).end()
    await assert.rejects(
      sessions.use(created.id, context, { revalidate: true }),
      (err: unknown) => (err as AuthgateError).code === 'backend_unreachable',
    )
    fake.handler = (_req, res) => res.writeHead(429).end()
    await assert.rejects(
      sessions.use(created.id, context, { revalidate: true }),
      (err: unknown) => (err as AuthgateError).code === 'over_request_rate_limit',
    )
    fake.handler = (req) => req.socket.destroy()
    await assert.rejects(
      sessions.use(created.id, context, { revalidate: true }),
      (err: unknown) => (err as AuthgateError).code === 'backend_unreachable',
    )
    assert.ok(await sessions.load(created.id), 'not ended by a failure to ask')
    fake.handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('not json')
    assert.deepEqual((await sessions.use(created.id, context, { revalidate: true }))?.session.user, { id: 'u1' })
    now += 61_000
    fake.handler = (_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' })
      res.end(
        '{"code":403,"error_code":"session_not_found","msg":"Session from session_id claim in JWT does not exist"}',
      )
    }
    assert.equal(await sessions.use(created.id, context, { revalidate: true }), undefined)
    assert.equal(await store.get(created.handle), undefined)
  })

  it('revalidation on two replicas of one store: one GET /user, the other waits for the record', async () => {
    const store = new MemorySessionStore({ now: () => now })
    const [a, b] = [make(store), make(store)]
    const created = await a.create(tokens(Math.floor(now / 1000) + 3600))
    fake.handler = (_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"id":"u1","checked":true}')
      }, 80)
    }
    now += 61_000
    const used = await Promise.all([
      ...Array.from({ length: 3 }, () => a.use(created.id, context, { revalidate: true })),
      ...Array.from({ length: 3 }, () => b.use(created.id, context, { revalidate: true })),
    ])
    assert.equal(fake.requests.length, 1)
    assert.equal(a.revalidations + b.revalidations, 1)
    for (const u of used) assert.deepEqual(u?.session.user, { id: 'u1', checked: true })
  })

  it('a refresh confirms the session: no GET /user right after it', async () => {
    const sessions = make()
    const created = await sessions.create(tokens())
    now += 61_000
    await sessions.use(created.id, context, { revalidate: true })
    assert.deepEqual(
      fake.requests.map((r) => r.target),
      ['/token?grant_type=refresh_token'],
    )
    assert.equal(sessions.revalidations, 0)
  })

  it('a replica that waits for another refresh gives up after the lock time', async () => {
    const store = new MemorySessionStore({ now: () => now })
    const sessions = make(store)
    const created = await sessions.create(tokens())
    now += 61_000
    await store.lock(created.handle, 10_000_000)
    const pending = sessions.use(created.id, context)
    // The clock moves past the deadline while the replica polls.
    setTimeout(() => (now += 60_000), 120)
    await assert.rejects(pending, (err: unknown) => (err as AuthgateError).code === 'request_timeout')
  })
})
