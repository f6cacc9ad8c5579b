import assert from 'node:assert/strict'
import { Agent, createServer, request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { installEarlyRefusal } from '../../src/http/early-refusal.ts'
import { createRateLimiter } from '../../src/ratelimit/index.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'
import { logCapture } from '../support/log-capture.ts'
import { SHARED_REDIS_URL, sharedRedisSkipReason, uniquePrefix } from '../ratelimit/support/redis.ts'

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

function send(port: number, path: string, headers: Record<string, string> = {}, body = ''): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (text += c))
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

const BODY = '{"email":"a@example.com","password":"correct-horse-battery"}'
const TOKEN = '/auth/token?grant_type=password'

/** Headers that differ between any two answers (the id, the date). */
function comparable(headers: Answer['headers']): Answer['headers'] {
  const { date: _date, 'x-request-id': _id, ...rest } = headers
  return rest
}

/**
 * Two answers' headers are the same but for the date and request id, and for the seconds left
 * (`Retry-After`, RateLimit's `t=`), which may differ by one: the answers are given a moment apart,
 * and on a loaded machine a second boundary can fall between them (150 then 149).
 */
function assertSameHeaders(a: Answer['headers'], b: Answer['headers']): void {
  const seconds = (h: Answer['headers']) => {
    const rest = comparable(h)
    const left: number[] = []
    for (const name of ['retry-after', 'ratelimit'])
      if (typeof rest[name] === 'string')
        rest[name] = rest[name].replace(/\d+$/, (n) => {
          left.push(Number(n))
          return 'N'
        })
    return { rest, left }
  }
  const x = seconds(a)
  const y = seconds(b)
  assert.deepEqual(x.rest, y.rest)
  assert.equal(x.left.length, y.left.length)
  x.left.forEach((n, i) => assert.ok(Math.abs(n - y.left[i]!) <= 1, `${n} and ${y.left[i]} seconds left`))
}

describe('the early refusal', () => {
  let backend: FakeBackend
  const apps: Record<'early' | 'hooked', { app: FastifyInstance; port: number; logs: ReturnType<typeof logCapture> }> =
    {} as never
  // Requests to POST /auth/token that reached Fastify's hooks.
  const routed = { early: 0, hooked: 0 }

  before(async () => {
    backend = await startFakeBackend()
    for (const name of ['early', 'hooked'] as const) {
      const logs = logCapture()
      const app = await buildApp({
        config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
        // The per-IP limit is what the early refusal answers; the per-account one runs after validation.
        rateLimit: loadRateLimitSettings({
          AUTHGATE_RATE_LIMIT: '2/5m',
          AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /token=off',
        }),
        logger: { stream: logs.stream, level: 'info' },
        refuseEarly: name === 'early',
      })
      app.addHook('onRequest', (request, _reply, done) => {
        if (request.routeOptions.url === '/auth/token') routed[name]++
        done()
      })
      await app.listen({ port: 0, host: '127.0.0.1' })
      apps[name] = { app, port: (app.server.address() as { port: number }).port, logs }
    }
  })
  after(async () => {
    for (const { app } of Object.values(apps)) await app.close()
    await backend.close()
  })

  it('answers a client over its limit as the route’s hook does: status, headers, body, log line, metrics', async () => {
    const answers: Record<string, Answer[]> = { early: [], hooked: [] }
    // In turns, so that the two services' buckets fill a request apart, not four: every later test
    // compares the seconds left in the two, and on a loaded machine four requests took over 2 s.
    for (let i = 0; i < 4; i++)
      for (const name of ['early', 'hooked'] as const)
        answers[name]!.push(await send(apps[name].port, TOKEN, { 'user-agent': 'ua/1' }, BODY))
    for (const name of ['early', 'hooked'] as const) {
      assert.deepEqual(
        answers[name]!.map((a) => a.status),
        [200, 200, 429, 429],
        `${name}: the first two let through, once each (one decision per request)`,
      )
    }
    for (const i of [2, 3]) {
      const early = answers.early![i]!
      const hooked = answers.hooked![i]!
      assertSameHeaders(early.headers, hooked.headers)
      assert.equal(early.body, hooked.body)
      assert.match(String(early.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    }
    assert.deepEqual(Object.keys(answers.early![2]!.headers), Object.keys(answers.hooked![2]!.headers), 'same order')
    assert.deepEqual(routed, { early: 2, hooked: 4 }, 'the refusals did not go through Fastify')

    const lineOf = (name: 'early' | 'hooked', id: string) => {
      const line = apps[name].logs.lines.find((l) => l.msg === 'request' && l.reqId === id)
      assert.ok(line, `${name}: a request line for ${id}`)
      const { time: _t, pid: _p, durationMs, reqId, ...rest } = line
      assert.equal(typeof durationMs, 'number')
      return { keys: Object.keys(line), rest, reqId }
    }
    const early = lineOf('early', String(answers.early![3]!.headers['x-request-id']))
    const hooked = lineOf('hooked', String(answers.hooked![3]!.headers['x-request-id']))
    assert.deepEqual(early.rest, hooked.rest)
    assert.deepEqual(early.keys, hooked.keys)
    assert.equal(early.rest.error, 'over_request_rate_limit')
    assert.equal(early.rest.route, '/auth/token')

    for (const name of ['early', 'hooked'] as const) {
      const text = await apps[name].app.authgateService.metrics.metrics()
      assert.match(text, /authgate_http_requests_total\{route="\/auth\/token",method="POST",status="429"\} 2/, name)
      assert.match(text, /authgate_http_requests_total\{route="\/auth\/token",method="POST",status="200"\} 2/, name)
      assert.match(text, /authgate_rate_limit_decisions_total\{decision="denied"\} 2/, name)
      assert.match(text, /authgate_rate_limit_decisions_total\{decision="allowed"\} 2/, name)
      assert.match(text, /authgate_rate_limit_denied_total\{limit="client",route="POST \/token"\} 2/, name)
    }
    // The line that says which limit answered, once for the two refusals (at most one per 10 s).
    for (const name of ['early', 'hooked'] as const) {
      const reached = apps[name].logs.lines.filter((l) => l.msg === 'rate limit reached')
      assert.deepEqual(
        reached.map((l) => [l.limit, l.route]),
        [['client', 'POST /token']],
        name,
      )
    }
  })

  it('answers in the shape the client asks for (X-Supabase-Api-Version)', async () => {
    const headers = { 'x-supabase-api-version': '2024-01-01' }
    const early = await send(apps.early.port, TOKEN, headers, BODY)
    const hooked = await send(apps.hooked.port, TOKEN, headers, BODY)
    assert.equal(early.status, 429)
    assertSameHeaders(early.headers, hooked.headers)
    assert.equal(early.body, hooked.body)
  })

  it('reads a repeated X-Supabase-Api-Version as Node.js joins it, as the hook does', async () => {
    // "2024-01-01, 2024-01-01" is no date: the legacy shape, from both.
    const raw = ['X-Supabase-Api-Version', '2024-01-01', 'x-supabase-api-version', '2024-01-01']
    const answers = await Promise.all(
      (['early', 'hooked'] as const).map(
        (name) =>
          new Promise<Answer>((resolve, reject) => {
            // Given as an array, the headers are sent as they are: Host too.
            const headers = [
              'host',
              `127.0.0.1:${apps[name].port}`,
              ...raw,
              'content-type',
              'application/json',
              'content-length',
              String(BODY.length),
            ]
            httpRequest({ host: '127.0.0.1', port: apps[name].port, method: 'POST', path: TOKEN, headers }, (res) => {
              let text = ''
              res.setEncoding('utf8')
              res.on('data', (c: string) => (text += c))
              res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }))
            })
              .on('error', reject)
              .end(BODY)
          }),
      ),
    )
    assert.equal(answers[0]!.status, 429)
    assert.equal((JSON.parse(answers[0]!.body) as { code: unknown }).code, 429, 'the legacy body')
    assertSameHeaders(answers[0]!.headers, answers[1]!.headers)
    assert.equal(answers[0]!.body, answers[1]!.body)
  })

  it('keeps each route’s own bucket on one kept-alive connection', async () => {
    // The client is over its limit on POST /token already; POST /otp has a bucket of its own (2).
    const sequence = ['/auth/token?grant_type=password', '/auth/otp', '/auth/otp', '/auth/otp', TOKEN]
    const statuses: Record<string, number[]> = {}
    for (const name of ['early', 'hooked'] as const) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      const sockets = new Set<unknown>()
      statuses[name] = []
      for (const path of sequence) {
        const status = await new Promise<number>((resolve, reject) => {
          const body = '{"email":"a@example.com"}'
          httpRequest(
            {
              host: '127.0.0.1',
              port: apps[name].port,
              method: 'POST',
              path,
              agent,
              headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
            },
            (res) => {
              sockets.add(res.socket)
              res.resume()
              res.on('end', () => resolve(res.statusCode!))
            },
          )
            .on('error', reject)
            .end(body)
        })
        statuses[name].push(status)
      }
      agent.destroy()
      assert.equal(sockets.size, 1, `${name}: one connection`)
    }
    assert.deepEqual(
      statuses.early!.map((s) => s === 429),
      [true, false, false, true, true],
    )
    assert.deepEqual(statuses.early, statuses.hooked)
  })

  it('reads past a refused request’s body, so the connection serves the next request', async () => {
    // The client is over its limit: a request whose 1 MiB body is still arriving after the 429,
    // then another on the same connection. Both are answered, in order, as through the hook.
    const body = '{"email":"a@example.com","password":"' + 'x'.repeat(2 ** 20) + '"}'
    for (const name of ['early', 'hooked'] as const) {
      const text = await new Promise<string>((resolve, reject) => {
        const socket = connect(apps[name].port, '127.0.0.1', () => {
          socket.write(
            `POST ${TOKEN} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
          )
          socket.write(body.slice(0, 1000))
          setImmediate(() => {
            socket.write(body.slice(1000))
            socket.write(
              `POST ${TOKEN} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`,
            )
          })
        })
        let text = ''
        socket.on('data', (c: Buffer) => (text += c.toString()))
        socket.on('end', () => resolve(text))
        socket.on('error', reject)
      })
      assert.deepEqual(
        [...text.matchAll(/HTTP\/1\.1 (\d+) /g)].map((m) => m[1]),
        ['429', '429'],
        name,
      )
    }
  })

  it('leaves what it cannot answer exactly to Fastify: another route, another method, no Host', async () => {
    // The same client, over its limit on POST /token: GET /settings is not limited.
    const settings = await new Promise<number>((resolve, reject) => {
      httpRequest({ host: '127.0.0.1', port: apps.early.port, path: '/auth/settings' }, (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
        .on('error', reject)
        .end()
    })
    assert.equal(settings, 200)
    // A path with a percent-encoded letter is not in the early table; its route's hook still refuses it.
    assert.equal((await send(apps.early.port, '/auth/tok%65n?grant_type=password', {}, BODY)).status, 429)
    // HTTP/1.1 without Host: Fastify's hook answers 400, not a 429.
    const head = await new Promise<string>((resolve, reject) => {
      const socket = connect(apps.early.port, '127.0.0.1', () =>
        socket.write(
          `POST ${TOKEN} HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`,
        ),
      )
      let text = ''
      socket.on('data', (c: Buffer) => (text += c.toString()))
      socket.on('end', () => resolve(text))
      socket.on('error', reject)
    })
    assert.match(head, /^HTTP\/1\.1 400 /)
    assert.match(head, /malformed_request/)
  })

  it('writes the same bytes as the hook: the head and body as they go on the wire', async () => {
    const raw = (port: number) =>
      new Promise<Buffer>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () =>
          socket.write(
            `POST ${TOKEN} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\nconnection: close\r\n\r\n${BODY}`,
          ),
        )
        const chunks: Buffer[] = []
        socket.on('data', (c: Buffer) => chunks.push(c))
        socket.on('end', () => resolve(Buffer.concat(chunks)))
        socket.on('error', reject)
      })
    // What differs between any two answers: the id, the date, the seconds left (see assertSameHeaders).
    const comparableBytes = (bytes: Buffer) =>
      bytes
        .toString('latin1')
        .replace(/^x-request-id: [0-9a-f-]{36}\r\n/m, 'x-request-id: ID\r\n')
        .replace(/^Date: [^\r]*\r\n/m, 'Date: D\r\n')
        .replace(/;t=\d+\r\n/, ';t=N\r\n')
        .replace(/^retry-after: \d+\r\n/m, 'retry-after: N\r\n')
    const early = await raw(apps.early.port)
    const hooked = await raw(apps.hooked.port)
    assert.match(early.toString('latin1'), /^HTTP\/1\.1 429 /)
    // The hook's own answer says `Connection: close` here as the early one does: both read the request's.
    assert.equal(comparableBytes(early), comparableBytes(hooked))
  })

  it('writes the line at the level the logger has now, changed at run time or not', async () => {
    const { app, port, logs } = apps.early
    const lineFor = async () => {
      const answer = await send(port, TOKEN, {}, BODY)
      assert.equal(answer.status, 429)
      const id = String(answer.headers['x-request-id'])
      return logs.lines.some((l) => l.msg === 'request' && l.reqId === id)
    }
    assert.equal(await lineFor(), true, 'at info')
    app.log.level = 'warn'
    try {
      assert.equal(await lineFor(), false, 'at warn')
    } finally {
      app.log.level = 'info'
    }
    assert.equal(await lineFor(), true, 'at info again')
  })
})

describe('the early refusal: where it stays out', () => {
  it('has no decider for a store that decides asynchronously, nor for a route that is not limited', () => {
    const config = loadRateLimitSettings({})
    const log = { warn() {}, info() {} }
    const asyncStore = {
      take: async () => ({ allowed: true, remaining: 1, resetMs: 0, retryAfterMs: 0 }),
      close: async () => {},
    }
    const limiter = createRateLimiter(config, log, { store: asyncStore as never })
    assert.equal(limiter.earlyDeciderFor('POST', '/token'), undefined)
    const memory = createRateLimiter(config, log)
    assert.equal(typeof memory.earlyDeciderFor('POST', '/token'), 'function')
    assert.equal(memory.earlyDeciderFor('GET', '/settings'), undefined)
    return memory.close()
  })

  it('is not installed with trusted proxies or CORS, whose answers it could not reproduce', async () => {
    const cases = [
      { extra: {}, installed: true },
      { extra: { trustedProxies: ['10.0.0.0/8'] }, installed: false },
      { extra: { corsOrigins: ['https://app.example.com'] }, installed: false },
    ]
    for (const { extra, installed } of cases) {
      const app = await buildApp({
        config: { backendUrl: parseBackendUrl('test', 'http://127.0.0.1:9'), ...extra },
        logger: false,
        refuseEarly: true,
      })
      const listeners = app.server.listeners('request') as Array<{ name: string }>
      assert.equal(listeners.length, 1)
      // Fastify's own request listener is its `preRouting` function.
      assert.equal(listeners[0]!.name !== 'preRouting', installed, JSON.stringify(extra))
      await app.close()
    }
  })

  it('keeps the socket timeout: on what it hands on, and on a refused client that does not read', async () => {
    const SOCKET_TIMEOUT_MS = 300
    const seen: Array<number | undefined> = []
    const server = createServer((req, res) => {
      seen.push(req.socket.timeout)
      res.end('on')
    })
    server.setTimeout(SOCKET_TIMEOUT_MS)
    server.keepAliveTimeout = 60_000
    const refusal = {
      headers: ['', '', 'content-type', 'application/json'],
      body: '{"x":1}',
      encoding: 'latin1' as const,
      code: undefined,
    }
    installEarlyRefusal(server, {
      routes: [{ method: 'POST', url: '/token', decide: () => refusal }],
      requestIdHeader: 'x-request-id',
      requestId: () => 'id',
      onRefused: () => {},
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    try {
      // Handed on: the request meets the socket timeout as it would without the early refusal.
      const agent = new Agent({ keepAlive: true })
      for (let i = 0; i < 2; i++)
        await new Promise<void>((resolve, reject) =>
          httpRequest({ host: '127.0.0.1', port, path: '/other', agent }, (res) => res.resume().on('end', resolve))
            .on('error', reject)
            .end(),
        )
      agent.destroy()
      assert.deepEqual(seen, [SOCKET_TIMEOUT_MS, SOCKET_TIMEOUT_MS])
      // Refused, pipelined, never read: the answers back up, nothing moves, and the connection is
      // closed after the socket timeout (not held until the keep-alive timeout, a minute here).
      const socket = connect(port, '127.0.0.1')
      socket.on('error', () => {})
      socket.pause()
      const started = performance.now()
      const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now() - started)))
      const head = 'POST /token HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n'
      socket.write(head.repeat(100_000))
      let bound: NodeJS.Timeout | undefined
      const ms = await Promise.race([
        closed,
        new Promise<number>((resolve) => (bound = setTimeout(resolve, 30_000, Infinity))),
      ])
      clearTimeout(bound)
      socket.destroy()
      assert.ok(ms < 30_000, `closed after ${Math.round(ms)} ms`)
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('refuses to wrap a server whose request listener is not Fastify’s alone', () => {
    const server = createServer()
    server.on('request', () => {})
    server.on('request', () => {})
    const decide = () => undefined
    assert.throws(
      () =>
        installEarlyRefusal(server, {
          routes: [{ method: 'POST', url: '/token', decide }],
          requestIdHeader: 'x-request-id',
          requestId: () => 'id',
          onRefused: () => {},
        }),
      /one request listener/,
    )
    // Nothing to refuse early: the server is left as it is.
    installEarlyRefusal(server, { routes: [], requestIdHeader: 'x', requestId: () => 'id', onRefused: () => {} })
    assert.equal(server.listeners('request').length, 2)
  })
})

describe('the early refusal with a shared Redis store', { skip: await sharedRedisSkipReason() }, () => {
  let backend: FakeBackend
  let app: FastifyInstance
  let port: number
  let routed = 0

  before(async () => {
    backend = await startFakeBackend()
    app = await buildApp({
      config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
      rateLimit: loadRateLimitSettings({
        AUTHGATE_RATE_LIMIT: '2/5m',
        AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /token=off',
        AUTHGATE_REDIS_URL: SHARED_REDIS_URL,
        AUTHGATE_REDIS_KEY_PREFIX: uniquePrefix('early-refusal'),
      }),
      logger: false,
      refuseEarly: true,
    })
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.routeOptions.url === '/auth/token') routed++
      done()
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
  })
  after(async () => {
    await app?.close()
    await backend?.close()
  })

  it('answers the refusals Redis already gave before routing, without asking Redis again', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) statuses.push((await send(port, TOKEN, {}, BODY)).status)
    assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429])
    // Two allowed and the first refusal went through the hook (one round trip each); the replica
    // then knew the refusal and answered the other three before routing.
    assert.equal(routed, 3)
    const refused = await send(port, TOKEN, {}, BODY)
    assert.equal(refused.status, 429)
    assert.match(String(refused.headers['retry-after']), /^\d+$/)
    assert.equal(backend.requests.length, 2)
  })
})
