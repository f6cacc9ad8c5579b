import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { buildApp, type AuthgateOptions } from '../../src/app.ts'
import { createClientErrorHandler } from '../../src/http/client-errors.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'
import { logCapture } from '../support/log-capture.ts'
import { rawExchange, splitResponse } from '../support/raw-http.ts'

/** Writes `head`, then `body` one byte per second; resolves with what came back and when the socket closed. */
function dribble(
  port: number,
  head: string,
  body: string,
): Promise<{ raw: Buffer; closedAfterMs: number; sent: number }> {
  return new Promise((resolve) => {
    const started = performance.now()
    const chunks: Buffer[] = []
    let sent = 0
    const socket: Socket = connect(port, '127.0.0.1', () => {
      socket.write(head)
      const tick = setInterval(() => {
        if (socket.destroyed || sent >= body.length) return clearInterval(tick)
        socket.write(body[sent++]!)
      }, 1000)
      socket.on('close', () => clearInterval(tick))
    })
    socket.on('data', (c) => chunks.push(c))
    socket.on('error', () => {})
    socket.on('close', () => resolve({ raw: Buffer.concat(chunks), closedAfterMs: performance.now() - started, sent }))
  })
}

function header(lines: string[], name: string): string | undefined {
  const line = lines.find((l) => l.toLowerCase().startsWith(name.toLowerCase() + ':'))
  return line?.slice(line.indexOf(':') + 1).trim()
}

describe('slow and malformed clients', () => {
  let backend: FakeBackend
  let app: FastifyInstance
  let port: number
  const logs = logCapture()

  before(async () => {
    backend = await startFakeBackend()
    app = await buildApp({
      rateLimit: false,
      logger: { stream: logs.stream },
      config: {
        backendUrl: parseBackendUrl('test', backend.url),
        headerTimeoutMs: 1000,
        requestTimeoutMs: 2000,
        maxHeaderSize: 2048,
      },
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  // The two dribbling clients wait on their own timeouts, side by side: neither uses a core.
  describe('dribbling clients', { concurrency: true }, () => {
    it('a body sent one byte per second is cut off at the request timeout with our error body', async () => {
      const body = '{"email":"a@example.com","password":"hunter2hunter2"}'
      const head =
        'POST /auth/signup?redirect_to=x&token=s3cret HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `X-Supabase-Api-Version: 2024-01-01\r\nContent-Length: ${body.length}\r\n\r\n`
      const { raw, closedAfterMs, sent } = await dribble(port, head, body)
      const res = splitResponse(raw)
      assert.equal(res.statusLine, 'HTTP/1.1 408 Request Timeout')
      assert.equal(header(res.headerLines, 'connection'), 'close')
      assert.equal(header(res.headerLines, 'x-sb-error-code'), 'client_timeout')
      assert.equal(header(res.headerLines, 'x-supabase-api-version'), '2024-01-01')
      assert.deepEqual(JSON.parse(res.body.toString()), {
        code: 'client_timeout',
        message: 'The request body was not received in time',
      })
      // 2 s request timeout, checked every 500 ms, plus scheduling slack on a busy machine.
      assert.ok(closedAfterMs >= 1900 && closedAfterMs < 4500, `closed after ${closedAfterMs} ms`)
      assert.ok(sent < body.length, 'the body was not complete')
      assert.equal(backend.requests.length, 0, 'nothing reached the backend')
      const line = logs.lines.find((l) => l.msg === 'client error' && l.phase === 'body')
      assert.ok(line, 'the timeout is logged')
      assert.equal(line.method, 'POST')
      assert.equal(line.url, '/auth/signup?redirect_to=x&token=[redacted]')
      assert.equal(line.reqId, header(res.headerLines, 'x-request-id'))
      assert.equal(line.status, 408)
    })

    it('headers sent one byte per second are cut off at the header timeout', async () => {
      // The first byte at once: the header timeout counts from it (D185).
      const { raw, closedAfterMs } = await dribble(port, 'G', 'ET /auth/settings HTTP/1.1\r\nHost: x\r\n\r\n')
      const res = splitResponse(raw)
      assert.equal(res.statusLine, 'HTTP/1.1 408 Request Timeout')
      assert.equal(header(res.headerLines, 'connection'), 'close')
      assert.deepEqual(JSON.parse(res.body.toString()), {
        code: 408,
        error_code: 'client_timeout',
        msg: 'The request headers were not received in time',
      })
      assert.ok(closedAfterMs >= 900 && closedAfterMs < 3500, `closed after ${closedAfterMs} ms`)
      assert.ok(logs.lines.some((l) => l.msg === 'client error' && l.phase === 'head' && l.error === 'client_timeout'))
    })
  })

  it('a control character in a header is a 400 in our shape with Connection: close, logged', async () => {
    const res = splitResponse(
      await rawExchange(port, 'GET /auth/settings HTTP/1.1\r\nHost: x\r\nX-A: a\u0001b\r\n\r\n'),
    )
    assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request')
    assert.equal(header(res.headerLines, 'connection'), 'close')
    assert.equal(header(res.headerLines, 'x-sb-error-code'), 'malformed_request')
    assert.deepEqual(JSON.parse(res.body.toString()), {
      code: 400,
      error_code: 'malformed_request',
      msg: 'Malformed HTTP request',
    })
    assert.ok(logs.lines.some((l) => l.msg === 'client error' && l.error === 'malformed_request'))
  })

  it('a bad request line is a 400 in our shape', async () => {
    const res = splitResponse(await rawExchange(port, 'GET /a b c HTTP/1.1\r\n\r\n'))
    assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request')
    assert.equal(header(res.headerLines, 'connection'), 'close')
  })

  it('a head over the header size limit is a 431 in our shape', async () => {
    const res = splitResponse(
      await rawExchange(port, `GET /auth/settings HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4000)}\r\n\r\n`),
    )
    assert.equal(res.statusLine, 'HTTP/1.1 431 Request Header Fields Too Large')
    assert.equal(header(res.headerLines, 'connection'), 'close')
    assert.equal(JSON.parse(res.body.toString()).error_code, 'request_header_too_large')
  })

  it('the same client error from many connections is logged at a bounded rate, with a count', async () => {
    const before = logs.lines.filter((l) => l.error === 'malformed_request').length
    for (let i = 0; i < 20; i++)
      await rawExchange(port, 'GET /auth/settings HTTP/1.1\r\nHost: x\r\nX-A: \u0001\r\n\r\n', 50)
    const after = logs.lines.filter((l) => l.error === 'malformed_request').length
    // The earlier test's line opened a 10 s window: these twenty are counted, not written.
    assert.equal(after - before, 0)
  })
})

describe('the configured request-id header on answers written to the socket', () => {
  it('a malformed request is answered with the same id header as every other answer', async () => {
    const backend = await startFakeBackend()
    const app = await buildApp({
      rateLimit: false,
      config: { backendUrl: parseBackendUrl('test', backend.url), requestIdHeader: 'x-correlation-id' },
    })
    try {
      await app.listen({ port: 0, host: '127.0.0.1' })
      const port = (app.server.address() as { port: number }).port
      const normal = await app.inject({ method: 'GET', url: '/livez' })
      assert.match(String(normal.headers['x-correlation-id']), /^[0-9a-f-]{36}$/)
      const res = splitResponse(await rawExchange(port, 'GET /a b c HTTP/1.1\r\n\r\n'))
      assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request')
      assert.match(header(res.headerLines, 'x-correlation-id') ?? '', /^[0-9a-f-]{36}$/)
      assert.equal(header(res.headerLines, 'x-request-id'), undefined)
    } finally {
      await app.close()
      await backend.close()
    }
  })
})

describe('a request without Host', () => {
  let backend: FakeBackend
  let app: FastifyInstance
  let port: number
  const logs = logCapture()

  before(async () => {
    backend = await startFakeBackend()
    app = await buildApp({
      rateLimit: false,
      logger: { stream: logs.stream },
      config: { backendUrl: parseBackendUrl('test', backend.url) },
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  it('HTTP/1.1: 400 malformed_request in our shape, with the request id, logged, not forwarded', async () => {
    const res = splitResponse(await rawExchange(port, 'GET /auth/settings HTTP/1.1\r\nAccept: */*\r\n\r\n'))
    assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request')
    assert.equal(header(res.headerLines, 'x-sb-error-code'), 'malformed_request')
    assert.match(header(res.headerLines, 'content-type') ?? '', /^application\/json/)
    assert.deepEqual(JSON.parse(res.body.toString()), {
      code: 400,
      error_code: 'malformed_request',
      msg: 'An HTTP/1.1 request must carry a Host header',
    })
    const id = header(res.headerLines, 'x-request-id')
    assert.ok(id)
    const line = logs.lines.find((l) => l.reqId === id && l.status === 400)
    assert.ok(line, 'a log line with the request id')
    assert.equal(line.error, 'malformed_request')
    assert.match(String(line.reason), /Host header/)
    assert.equal(backend.requests.length, 0)
  })

  it('HTTP/1.0 needs no Host, and HTTP/1.1 with one is served', async () => {
    const old = splitResponse(await rawExchange(port, 'GET /auth/settings HTTP/1.0\r\n\r\n'))
    assert.equal(old.statusLine, 'HTTP/1.1 200 OK')
    const ok = splitResponse(
      await rawExchange(port, 'GET /auth/settings HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    )
    assert.equal(ok.statusLine, 'HTTP/1.1 200 OK')
    assert.equal(backend.requests.length, 2)
  })
})

describe('the Host check and the request id ahead of the hooks (D171)', () => {
  let backend: FakeBackend
  let app: FastifyInstance
  let port: number
  let handled = 0
  let hooked = 0

  before(async () => {
    backend = await startFakeBackend()
    app = await buildApp({ rateLimit: false, config: { backendUrl: parseBackendUrl('test', backend.url) } })
    // An application's hooks: an `onSend` that waits keeps the refusal from being written at once.
    app.addHook('onRequest', (_request, _reply, done) => {
      hooked++
      done()
    })
    app.addHook('onSend', async (_request, _reply, payload) => {
      await new Promise((resolve) => setImmediate(resolve))
      return payload
    })
    app.get('/mine', async () => {
      handled++
      return { ok: true }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
  })
  after(async () => {
    await app.close()
    await backend.close()
  })

  it('a refused Host runs nothing after the refusal, even where an onSend hook waits', async () => {
    const bad = splitResponse(await rawExchange(port, 'GET /mine HTTP/1.1\r\nHost: a, b\r\nConnection: close\r\n\r\n'))
    assert.equal(bad.statusLine, 'HTTP/1.1 400 Bad Request')
    assert.equal(header(bad.headerLines, 'x-sb-error-code'), 'malformed_request')
    assert.ok(header(bad.headerLines, 'x-request-id'))
    assert.equal(handled, 0)
    assert.equal(hooked, 0)
    const ok = splitResponse(await rawExchange(port, 'GET /mine HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))
    assert.equal(ok.statusLine, 'HTTP/1.1 200 OK')
    assert.ok(header(ok.headerLines, 'x-request-id'))
    assert.equal(handled, 1)
    assert.equal(hooked, 1)
  })

  it('the request id is on a 404 and an auth route, and not on a target Fastify cannot route, as before', async () => {
    const missing = splitResponse(
      await rawExchange(port, 'GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    )
    assert.equal(missing.statusLine, 'HTTP/1.1 404 Not Found')
    assert.ok(header(missing.headerLines, 'x-request-id'))
    const settings = splitResponse(
      await rawExchange(port, 'GET /auth/settings HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    )
    assert.equal(settings.statusLine, 'HTTP/1.1 200 OK')
    assert.ok(header(settings.headerLines, 'x-request-id'))
    const malformed = splitResponse(
      await rawExchange(port, 'GET /auth/a%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    )
    assert.equal(malformed.statusLine, 'HTTP/1.1 400 Bad Request')
    assert.equal(header(malformed.headerLines, 'x-request-id'), undefined)
  })
})

/**
 * Blocks this thread, the server's with it: what a busy event loop does to bytes that have reached
 * its socket. Waits on an atomic, so the core is free meanwhile.
 */
const blockFor = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/** Everything received on `socket`, and when it closed (ms after `since`). */
function received(socket: Socket, since: number) {
  const seen = { raw: '', closedAfterMs: undefined as number | undefined }
  socket.on('data', (c: Buffer) => (seen.raw += c.toString('latin1')))
  socket.on('error', () => {})
  socket.on('close', () => (seen.closedAfterMs = performance.now() - since))
  return seen
}

async function until(done: () => boolean, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs
  while (!done() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20))
}

const SETTINGS_REQUEST = 'GET /auth/settings HTTP/1.1\r\nHost: x\r\n\r\n'

/** authgate without rate limits before a fake backend, with these client limits, on a port of its own. */
async function serving(
  limits: { headerTimeoutMs: number; requestTimeoutMs: number; keepAliveTimeoutMs?: number },
  logger?: AuthgateOptions['logger'],
): Promise<{ app: FastifyInstance; port: number; close: () => Promise<void> }> {
  const backend = await startFakeBackend()
  const app = await buildApp({
    rateLimit: false,
    ...(logger === undefined ? {} : { logger }),
    config: { backendUrl: parseBackendUrl('test', backend.url), ...limits },
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const close = async () => {
    await app.close()
    await backend.close()
  }
  return { app, port: (app.server.address() as { port: number }).port, close }
}

// A client may open a connection before it has a request for it (a browser's preconnect, a pool
// that opens ahead, the soak's load generator): Node.js counts that connection's first head from
// the moment it was accepted, and its periodic check runs before the loop reads what has arrived.
describe('connections opened ahead of their first request (D185)', { concurrency: true }, () => {
  const HEADER_TIMEOUT_MS = 1000
  let service: Awaited<ReturnType<typeof serving>>
  let port: number

  before(async () => {
    service = await serving({ headerTimeoutMs: HEADER_TIMEOUT_MS, requestTimeoutMs: 2000 })
    port = service.port
  })
  after(() => service.close())

  it('a request that has arrived when the header check falls due is answered, not refused 408', async () => {
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    const seen = received(socket, performance.now())
    try {
      // Unused for half the header timeout: Node.js's check cannot have judged it yet.
      await new Promise((r) => setTimeout(r, HEADER_TIMEOUT_MS / 2))
      // From the check phase, the next timers (Node.js's check among them) run before the next poll.
      await new Promise((r) => setImmediate(r))
      socket.write(SETTINGS_REQUEST)
      // The server busy meanwhile: the request waits in the kernel while the connection grows older
      // than the header timeout and the check (every 250 ms here) falls due.
      blockFor(HEADER_TIMEOUT_MS + 500)
      await until(() => seen.raw.includes('\r\n\r\n') || seen.closedAfterMs !== undefined, 10_000)
      assert.match(seen.raw, /^HTTP\/1\.1 200 OK\r\n/, seen.raw.slice(0, 200))
    } finally {
      socket.destroy()
    }
  })

  it('a connection unused past the header timeout stays open and carries its first request', async () => {
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    const seen = received(socket, performance.now())
    try {
      // Past the timeout and two checks (every 250 ms), with room for a loaded machine.
      await new Promise((r) => setTimeout(r, HEADER_TIMEOUT_MS * 2))
      assert.deepEqual(seen, { raw: '', closedAfterMs: undefined }, 'nothing answered, not closed')
      socket.write(SETTINGS_REQUEST)
      await until(() => seen.raw.includes('\r\n\r\n') || seen.closedAfterMs !== undefined, 10_000)
      assert.match(seen.raw, /^HTTP\/1\.1 200 OK\r\n/, seen.raw.slice(0, 200))
    } finally {
      socket.destroy()
    }
  })

  it('a head begun and left unfinished is still refused 408 at the header timeout', async () => {
    const started = performance.now()
    const socket = connect(port, '127.0.0.1', () => socket.write('GET /auth/settings HTTP/1.1\r\nHost: x\r\n'))
    const seen = received(socket, started)
    await until(() => seen.closedAfterMs !== undefined, 10_000)
    assert.match(seen.raw, /^HTTP\/1\.1 408 Request Timeout\r\n/)
    assert.match(seen.raw, /"msg":"The request headers were not received in time"/)
    assert.ok(seen.closedAfterMs! >= HEADER_TIMEOUT_MS - 100, `closed after ${seen.closedAfterMs} ms`)
  })
})

describe('a connection that never sends a request (D185)', { concurrency: true }, () => {
  const HEADER_TIMEOUT_MS = 500
  const KEEP_ALIVE_TIMEOUT_MS = 3000
  let service: Awaited<ReturnType<typeof serving>>
  let port: number

  before(async () => {
    service = await serving({
      headerTimeoutMs: HEADER_TIMEOUT_MS,
      requestTimeoutMs: 1000,
      keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
    })
    port = service.port
  })
  after(() => service.close())

  it('is closed without an answer once an idle connection would be (the keep-alive timeout)', async () => {
    const started = performance.now()
    const socket = connect(port, '127.0.0.1')
    const seen = received(socket, started)
    await until(() => seen.closedAfterMs !== undefined, 20_000)
    assert.equal(seen.raw, '', 'no answer: there was no request')
    assert.ok(
      seen.closedAfterMs! >= KEEP_ALIVE_TIMEOUT_MS && seen.closedAfterMs! < 20_000,
      `closed after ${seen.closedAfterMs} ms`,
    )
  })

  it('bytes that never make a request (a bare CRLF) do not hold it: closed without an answer (D187)', async () => {
    const started = performance.now()
    const socket = connect(port, '127.0.0.1')
    const seen = received(socket, started)
    // After the header check has found the connection unused, well before the keep-alive timeout.
    setTimeout(() => socket.write('\r\n'), HEADER_TIMEOUT_MS * 2)
    await until(() => seen.closedAfterMs !== undefined, 20_000)
    assert.equal(seen.raw, '', 'no answer: there was no request')
    assert.ok(seen.closedAfterMs! >= KEEP_ALIVE_TIMEOUT_MS, `closed after ${seen.closedAfterMs} ms`)
  })

  it('a head begun late after a bare CRLF is never refused before a header timeout from its first byte (D187)', async () => {
    const started = performance.now()
    const socket = connect(port, '127.0.0.1')
    const seen = received(socket, started)
    let begunAt: number | undefined
    setTimeout(() => !socket.destroyed && socket.write('\r\n'), HEADER_TIMEOUT_MS * 2)
    // Kept at about 0.5 s; the sweep closes it 3.5 s (header and keep-alive timeouts) after it is
    // first seen. The previous design judged it again 1.5 s after its keep-alive timeout ended
    // (about 5 s) and answered 408 a quarter of a second into a head begun here.
    setTimeout(
      () => {
        if (socket.destroyed) return
        begunAt = performance.now() - started
        socket.write('GET /auth/settings HTTP/1.1\r\n')
      },
      HEADER_TIMEOUT_MS + KEEP_ALIVE_TIMEOUT_MS + 1300,
    )
    await until(() => seen.closedAfterMs !== undefined, 20_000)
    if (seen.raw !== '') {
      assert.ok(begunAt !== undefined, seen.raw.slice(0, 200))
      assert.ok(
        seen.closedAfterMs! - begunAt >= HEADER_TIMEOUT_MS - 50,
        `answered ${seen.raw.slice(0, 30)} ${seen.closedAfterMs! - begunAt} ms after the head's first byte`,
      )
    }
  })
})

describe('the connection sweep (D187)', { concurrency: true }, () => {
  // Node.js checks heads every 500 ms here; the sweep runs as often.
  const HEADER_TIMEOUT_MS = 2000
  const KEEP_ALIVE_TIMEOUT_MS = 250
  let service: Awaited<ReturnType<typeof serving>>
  let port: number
  const logs = logCapture()

  before(async () => {
    service = await serving(
      { headerTimeoutMs: HEADER_TIMEOUT_MS, requestTimeoutMs: 4000, keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS },
      { stream: logs.stream, level: 'info' },
    )
    port = service.port
  })
  after(() => service.close())

  it('leaves a head begun to the header timeout, past the bound without a request: it is served', async () => {
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    const seen = received(socket, performance.now())
    try {
      // Unused past the header check (2–2.5 s), then a head begun at 3 s and finished 1.4 s later:
      // the sweeps past the bound (3.25 s without a request: the keep-alive timeout, Node.js's
      // second after it and the header timeout, plus up to one interval) find it begun, and leave
      // it to Node.js's header check.
      await new Promise((r) => setTimeout(r, HEADER_TIMEOUT_MS + 1000))
      socket.write('GET /auth/settings HTTP/1.1\r\n')
      await new Promise((r) => setTimeout(r, 1400))
      socket.write('Host: x\r\n\r\n')
      await until(() => seen.raw.includes('\r\n\r\n') || seen.closedAfterMs !== undefined, 10_000)
      assert.match(seen.raw, /^HTTP\/1\.1 200 OK\r\n/, seen.raw.slice(0, 200))
    } finally {
      socket.destroy()
    }
  })

  it('closes an idle keep-alive connection that sends a bare CR more often than the keep-alive timeout', async () => {
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    const seen = received(socket, performance.now())
    socket.write(SETTINGS_REQUEST)
    await until(() => seen.raw.includes('\r\n\r\n'), 10_000)
    assert.match(seen.raw, /^HTTP\/1\.1 200 OK\r\n/)
    const answered = seen.raw.length
    const answeredAt = performance.now()
    const trickle = setInterval(() => !socket.destroyed && socket.write('\r'), KEEP_ALIVE_TIMEOUT_MS / 2)
    try {
      await until(() => seen.closedAfterMs !== undefined, 10_000)
      const heldMs = performance.now() - answeredAt
      assert.notEqual(seen.closedAfterMs, undefined, 'held open by the stray bytes')
      assert.ok(heldMs >= HEADER_TIMEOUT_MS + KEEP_ALIVE_TIMEOUT_MS - 100, `closed ${heldMs} ms after the answer`)
      assert.equal(seen.raw.length, answered, 'closed without an answer')
    } finally {
      clearInterval(trickle)
      socket.destroy()
    }
    const metrics = (await service.app.inject({ method: 'GET', url: '/metrics' })).body
    assert.match(metrics, /^authgate_connections_closed_without_request_total\{reason="stray_bytes"\} [1-9]/m)
    // Said, once per 10 s at most, at info: a flood of such connections shows in the log.
    const said = logs.lines.filter((l) => l.reason === 'stray_bytes')
    assert.equal(said.length, 1, JSON.stringify(said))
    assert.equal(said[0]!.level, 30)
    assert.match(String(said[0]!.msg), /^client connection closed: bytes that began no request/)
  })
})

it('leaves an idle keep-alive connection to Node.js when the header timeout is under a second: closed, not counted', async () => {
  const { app, port, close } = await serving({ headerTimeoutMs: 300, requestTimeoutMs: 1000, keepAliveTimeoutMs: 500 })
  try {
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    const seen = received(socket, performance.now())
    socket.write(SETTINGS_REQUEST)
    await until(() => seen.raw.includes('\r\n\r\n'), 10_000)
    // Node.js closes it a second after the keep-alive timeout (1.5 s); a bound of the keep-alive and
    // header timeouts alone (0.8 s) closed it first and counted an honest idle connection.
    await until(() => seen.closedAfterMs !== undefined, 10_000)
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body
    assert.match(metrics, /^authgate_connections_closed_without_request_total\{reason="stray_bytes"\} 0$/m)
  } finally {
    await close()
  }
})

describe('closing the service with connections that have no request in progress (D188)', () => {
  it('cuts a request whose body is still arriving a request timeout after the close began', async () => {
    const backend = await startFakeBackend()
    // With the early refusal, Node.js's socket timeout is off, and its request timeout stops with
    // the close: nothing else would end the upload.
    const app = await buildApp({
      refuseEarly: true,
      config: { backendUrl: parseBackendUrl('test', backend.url), headerTimeoutMs: 500, requestTimeoutMs: 3000 },
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const socket = connect((app.server.address() as { port: number }).port, '127.0.0.1')
    try {
      await once(socket, 'connect')
      const seen = received(socket, performance.now())
      socket.write(
        'POST /auth/signup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"em',
      )
      await new Promise((r) => setTimeout(r, 200))
      const closing = performance.now()
      const closed = await Promise.race([
        app.close().then(() => 'closed'),
        new Promise((r) => setTimeout(r, 10_000, 'still waiting')),
      ])
      assert.equal(closed, 'closed', 'app.close() waited for the stalled upload')
      const tookMs = performance.now() - closing
      assert.ok(tookMs >= 2500, `cut ${tookMs} ms after the close began, before the request timeout`)
      await until(() => seen.closedAfterMs !== undefined, 5000)
      assert.notEqual(seen.closedAfterMs, undefined, 'the upload still open')
    } finally {
      socket.destroy()
      await app.close()
      await backend.close()
    }
  })

  it('closes silent, kept and half-sent-head connections at once, and finishes the answer in flight', async () => {
    // Answers after 1 s: a request in flight when the close begins.
    const backend = await startFakeBackend((req, res) => {
      req.resume()
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{}')
      }, 1000)
    })
    const logs = logCapture()
    // With the early refusal, Node.js's socket timeout is off: nothing else would close them.
    const app = await buildApp({
      refuseEarly: true,
      logger: { stream: logs.stream },
      config: {
        backendUrl: parseBackendUrl('test', backend.url),
        headerTimeoutMs: 500,
        requestTimeoutMs: 1000,
        keepAliveTimeoutMs: 3000,
      },
    })
    const sockets: Socket[] = []
    try {
      await app.listen({ port: 0, host: '127.0.0.1' })
      const port = (app.server.address() as { port: number }).port
      const open = async (first?: string) => {
        const socket = connect(port, '127.0.0.1')
        sockets.push(socket)
        await once(socket, 'connect')
        if (first !== undefined) socket.write(first)
        return received(socket, performance.now())
      }
      // Kept unused by the header check, then the first byte of a head.
      const kept = await open()
      await new Promise((r) => setTimeout(r, 1200))
      sockets[0]!.write('G')
      const inFlight = await open(SETTINGS_REQUEST)
      const silent = await open()
      const halfHead = await open('GET /auth/settings HTTP/1.1\r\n')
      await new Promise((r) => setTimeout(r, 200))
      const closing = performance.now()
      const closed = await Promise.race([
        app.close().then(() => 'closed'),
        new Promise((r) => setTimeout(r, 8000, 'still waiting')),
      ])
      assert.equal(closed, 'closed', 'app.close() waited for connections with no request')
      assert.ok(performance.now() - closing < 5000, `closed in ${performance.now() - closing} ms`)
      for (const [name, seen] of Object.entries({ kept, silent, halfHead })) {
        assert.notEqual(seen.closedAfterMs, undefined, `${name} still open`)
        assert.equal(seen.raw, '', `${name} answered`)
      }
      await until(() => inFlight.closedAfterMs !== undefined, 5000)
      assert.match(inFlight.raw, /^HTTP\/1\.1 200 OK\r\n/, inFlight.raw.slice(0, 200))
    } finally {
      for (const socket of sockets) socket.destroy()
      await app.close()
      await backend.close()
    }
  })
})

it('closing the service closes a connection kept unused, which Node.js does not count as idle (D185)', async () => {
  const backend = await startFakeBackend()
  const app = await buildApp({
    rateLimit: false,
    config: { backendUrl: parseBackendUrl('test', backend.url), headerTimeoutMs: 500, requestTimeoutMs: 1000 },
  })
  try {
    await app.listen({ port: 0, host: '127.0.0.1' })
    const socket = connect((app.server.address() as { port: number }).port, '127.0.0.1')
    const seen = received(socket, performance.now())
    // Past the header timeout and its checks: kept, for the keep-alive timeout (72 s).
    await new Promise((r) => setTimeout(r, 1500))
    assert.equal(seen.closedAfterMs, undefined)
    const closing = performance.now()
    await app.close()
    const tookMs = performance.now() - closing
    assert.ok(tookMs < 10_000, `closed in ${tookMs} ms`)
    await until(() => seen.closedAfterMs !== undefined, 5000)
    assert.deepEqual(seen.raw, '', 'closed without an answer')
    assert.notEqual(seen.closedAfterMs, undefined)
  } finally {
    await app.close()
    await backend.close()
  }
})

/** A plain Fastify server with the handler, a 1 s request timeout and a short log interval. */
async function withHandler(logIntervalMs: number) {
  const logs = logCapture()
  const handler = createClientErrorHandler('x-request-id', { logIntervalMs })
  const app = Fastify({
    logger: { stream: logs.stream },
    clientErrorHandler: handler,
    http: { headersTimeout: 1000, requestTimeout: 1000, connectionsCheckingInterval: 100 },
    requestTimeout: 1000,
  })
  app.post('/x', async () => ({ ok: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, logs, handler, port: (app.server.address() as { port: number }).port }
}

/** Sends a head announcing a body that never comes, waits for the answer, then half-closes. */
function cutOff(port: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a'),
    )
    socket.on('data', (c) => {
      chunks.push(c)
      socket.end() // the client finishes its side after the 408, as curl does
    })
    socket.on('error', () => {})
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')))
  })
}

describe('client errors: one line per answer, counts said promptly, a metric', () => {
  it('a request cut by the timeout is logged once (no second line for the end of its connection)', async () => {
    const { app, logs, handler, port } = await withHandler(10_000)
    try {
      const raw = await cutOff(port)
      assert.match(raw, /^HTTP\/1\.1 408 /)
      const id = /x-request-id: (\S+)/i.exec(raw)?.[1]
      assert.ok(id)
      await new Promise((r) => setTimeout(r, 300)) // room for a late parser error
      const lines = logs.lines.filter((l) => l.msg === 'client error')
      assert.equal(lines.length, 1, JSON.stringify(lines))
      assert.equal(lines[0]!.error, 'client_timeout')
      assert.deepEqual([...handler.counts], [['client_timeout\tERR_HTTP_REQUEST_TIMEOUT', 1]])
    } finally {
      await app.close()
    }
  })

  it('many slow clients cut at once: one line, then a summary with the rest when the interval ends', async () => {
    const interval = 1500
    const { app, logs, port } = await withHandler(interval)
    try {
      const clients = 40
      const answers = await Promise.all(Array.from({ length: clients }, () => cutOff(port)))
      assert.ok(answers.every((a) => a.startsWith('HTTP/1.1 408 ')))
      // Nothing else happens: the summary must come from the timer, not from a later error. It is
      // awaited (up to three intervals), then a little longer for any line that should not come.
      const timeouts = () => logs.lines.filter((l) => l.msg === 'client error' && l.error === 'client_timeout')
      const counted = () => timeouts().reduce((n, l) => n + Number(l.occurrences), 0)
      const deadline = performance.now() + interval * 3
      while (counted() < clients && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      await new Promise((r) => setTimeout(r, 300))
      const lines = timeouts()
      const total = counted()
      assert.equal(total, clients, JSON.stringify(lines))
      assert.ok(lines.length >= 2 && lines.length <= 3, `${lines.length} lines`)
      assert.equal(lines[0]!.occurrences, 1)
      assert.ok(
        lines.slice(1).every((l) => l.repeated === true),
        'the later lines are summaries',
      )
      assert.ok(!logs.lines.some((l) => l.error === 'malformed_request'), 'no parser error for the cut connections')
    } finally {
      await app.close()
    }
  })

  it('the service counts client errors in authgate_client_errors_total', async () => {
    const backend = await startFakeBackend()
    const app = await buildApp({
      rateLimit: false,
      config: { backendUrl: parseBackendUrl('test', backend.url), maxHeaderSize: 2048 },
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as { port: number }).port
    try {
      const scrape = async () => (await app.inject({ method: 'GET', url: '/metrics' })).body
      assert.match(
        await scrape(),
        /^authgate_client_errors_total\{error="request_header_too_large",reason="HPE_HEADER_OVERFLOW"\} 0$/m,
      )
      for (let i = 0; i < 3; i++)
        await rawExchange(port, `GET /auth/settings HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4000)}\r\n\r\n`)
      await rawExchange(port, 'GET /auth/settings HTTP/1.1\r\nHost: x\r\nX-A: \u0001\r\n\r\n')
      const text = await scrape()
      assert.match(
        text,
        /^authgate_client_errors_total\{error="request_header_too_large",reason="HPE_HEADER_OVERFLOW"\} 3$/m,
      )
      assert.match(text, /^authgate_client_errors_total\{error="malformed_request",reason="HPE_[A-Z_]+"\} 1$/m)
    } finally {
      await app.close()
      await backend.close()
    }
  })
})
