import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { test } from 'node:test'
import { StandIns } from '../../src/sessions/stand-ins.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { chromiumUnavailableReason, launchChromium } from '../../e2e/support/chromium.ts'
import { ANON, PUBLISHABLE, withServices } from './support.ts'
import { logCapture } from '../support/log-capture.ts'

interface SocketUpstream {
  url: string
  handshakes: IncomingMessage[]
  sockets: Duplex[]
  /** Every byte the upstream received after its handshakes, in order. */
  received: Buffer[]
  /**
   * How the next handshake is answered: accepted (echoing what it receives), accepted without an
   * echo (`quiet`: a browser fails a socket on the masked frames an echo sends it), or refused.
   */
  mode: 'accept' | 'quiet' | 'refuse'
  close(): Promise<void>
}

/** A WebSocket upstream at the byte level: answers the handshake as RFC 6455 §4.2.2 says, then echoes. */
async function startSocketUpstream(): Promise<SocketUpstream> {
  const server: Server = createServer((_req, res) => res.writeHead(426).end())
  const state: SocketUpstream = {
    url: '',
    handshakes: [],
    sockets: [],
    received: [],
    mode: 'accept',
    close: () =>
      new Promise((resolve) => {
        for (const s of state.sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    state.handshakes.push(req)
    if (state.mode === 'refuse') {
      socket.end(
        'HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: 18\r\n\r\n{"error":"denied"}',
      )
      return
    }
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64')
    const protocol = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')[0]!
      .trim()
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n` +
        (protocol ? `Sec-WebSocket-Protocol: ${protocol}\r\n` : '') +
        '\r\n',
    )
    state.sockets.push(socket)
    const echo = state.mode === 'accept'
    socket.on('data', (c: Buffer) => {
      state.received.push(c)
      if (echo) socket.write(c)
    })
    socket.on('error', () => socket.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return state
}

interface Client {
  socket: Socket
  head: string
  /** Bytes received after the head. */
  received(): Buffer
  closed: Promise<void>
}

/** Sends a WebSocket handshake on a raw socket and resolves once the answer's head is in. */
function handshake(port: number, target: string, extra = ''): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let buffer = Buffer.alloc(0)
    let head: string | undefined
    const closed = new Promise<void>((r) => socket.on('close', () => r()))
    socket.on('error', reject)
    socket.on('data', (c: Buffer) => {
      buffer = Buffer.concat([buffer, c])
      if (head !== undefined) return
      const end = buffer.indexOf('\r\n\r\n')
      if (end === -1) return
      head = buffer.subarray(0, end).toString('latin1')
      buffer = buffer.subarray(end + 4)
      resolve({ socket, head, received: () => buffer, closed })
    })
    socket.on('close', () => {
      if (head === undefined) resolve({ socket, head: buffer.toString('latin1'), received: () => buffer, closed })
    })
    socket.write(
      `GET ${target} HTTP/1.1\r\nHost: api.example.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n' +
        `${extra}\r\n`,
    )
  })
}

/** The texts of the whole masked client frames in `data` (RFC 6455 §5.2). */
function clientTexts(data: Buffer): string[] {
  const out: string[] = []
  let at = 0
  while (at + 2 <= data.length) {
    let length = data[at + 1]! & 0x7f
    let offset = at + 2
    if (length === 126) {
      length = data.readUInt16BE(offset)
      offset += 2
    }
    if (offset + 4 + length > data.length) break
    const mask = data.subarray(offset, offset + 4)
    const payload = Buffer.from(data.subarray(offset + 4, offset + 4 + length))
    for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!
    out.push(payload.toString())
    at = offset + 4 + length
  }
  return out
}

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 10))
  }
}

test('the socket handshake reaches Realtime as its gateway sends it, and frames pass both ways untouched', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: `${up.url}/realtime` }, realtimeTenant: 'realtime-dev' })
  try {
    const port = Number(new URL(h.url).port)
    const client = await handshake(
      port,
      `/realtime/v1/websocket?apikey=${PUBLISHABLE}&vsn=1.0.0`,
      'Sec-WebSocket-Protocol: realtime, other\r\nX-Forwarded-For: 6.6.6.6\r\n',
    )
    assert.match(client.head, /^HTTP\/1\.1 101 /)
    assert.match(client.head, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/)
    assert.match(client.head, /\r\nSec-WebSocket-Protocol: realtime/)
    assert.match(client.head, /\r\nx-request-id: [0-9a-f-]{36}/)
    const req = up.handshakes[0]!
    assert.equal(req.url, `/realtime/socket/websocket?apikey=${encodeURIComponent(ANON)}&vsn=1.0.0`)
    assert.equal(req.headers['x-api-key'], ANON)
    assert.equal(req.headers.apikey, ANON)
    assert.equal(req.headers.host, 'realtime-dev')
    assert.equal(req.headers['sec-websocket-protocol'], 'realtime, other')
    assert.equal(req.headers['x-forwarded-for'], '127.0.0.1')
    assert.equal(req.headers['x-forwarded-host'], 'api.example.test')
    assert.equal(req.headers.authorization, undefined, 'no Authorization is built on the socket')
    // A masked text frame "hi" (RFC 6455 §5.7), echoed byte for byte by the upstream.
    const frame = Buffer.from([0x81, 0x82, 1, 2, 3, 4, 0x68 ^ 1, 0x69 ^ 2])
    client.socket.write(frame)
    await until(() => client.received().length >= frame.length)
    assert.ok(client.received().equals(frame))
    // Realtime closing its end closes the client's.
    up.sockets[0]!.destroy()
    await client.closed
  } finally {
    await h.close()
    await up.close()
  }
})

test('without a key the handshake is refused in our shape, and Realtime is not asked', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url } })
  try {
    const client = await handshake(Number(new URL(h.url).port), '/realtime/v1/websocket?vsn=1.0.0')
    await client.closed
    assert.match(client.head, /^HTTP\/1\.1 401 Unauthorized/)
    assert.match(client.received().toString(), /"code":"no_api_key"/)
    const bad = await handshake(Number(new URL(h.url).port), '/realtime/v1/websocket?apikey=nope')
    await bad.closed
    assert.match(bad.received().toString(), /"code":"invalid_api_key"/)
    assert.equal(up.handshakes.length, 0)
  } finally {
    await h.close()
    await up.close()
  }
})

test("Realtime's own refusal of the handshake is relayed, then the connection ends", async () => {
  const up = await startSocketUpstream()
  up.mode = 'refuse'
  const h = await withServices({ urls: { realtime: up.url } })
  try {
    const client = await handshake(Number(new URL(h.url).port), `/realtime/v1/websocket?apikey=${PUBLISHABLE}`)
    await client.closed
    assert.match(client.head, /^HTTP\/1\.1 403 Forbidden/)
    assert.equal(client.received().toString(), '{"error":"denied"}')
  } finally {
    await h.close()
    await up.close()
  }
})

test('an idle socket is closed after the idle time; traffic keeps it open', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url }, timeoutsMs: { realtime: 400 } })
  try {
    const client = await handshake(Number(new URL(h.url).port), `/realtime/v1/websocket?apikey=${PUBLISHABLE}`)
    const opened = Date.now()
    // A heartbeat every 150 ms for 700 ms: longer than the idle time in all, never idle that long.
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 150))
      client.socket.write(Buffer.from([0x89, 0x80, 0, 0, 0, 0]))
    }
    assert.equal(client.socket.destroyed, false)
    await client.closed
    assert.ok(Date.now() - opened >= 700, 'closed only once idle')
  } finally {
    await h.close()
    await up.close()
  }
})

test('traffic from Realtime alone keeps a socket open; it closes the idle time after the last frame', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url }, timeoutsMs: { realtime: 400 } })
  try {
    const client = await handshake(Number(new URL(h.url).port), `/realtime/v1/websocket?apikey=${PUBLISHABLE}`)
    // Realtime's side sends a frame every 150 ms for 750 ms; the client sends nothing.
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 150))
      up.sockets[0]!.write(Buffer.from([0x81, 0x02, 0x6f, 0x6b]))
    }
    const last = Date.now()
    assert.equal(client.socket.destroyed, false)
    await client.closed
    const closed = Date.now()
    assert.ok(closed - last >= 390 && closed - last < 400 + 300, `closed ${closed - last} ms after the last frame`)
    assert.equal(client.received().length, 20)
  } finally {
    await h.close()
    await up.close()
  }
})

test('stopping authgate closes its sockets; an unreachable Realtime is 502', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url } })
  const client = await handshake(Number(new URL(h.url).port), `/realtime/v1/websocket?apikey=${PUBLISHABLE}`)
  assert.match(client.head, / 101 /)
  await h.close()
  await client.closed
  await up.close()

  const gone = await withServices({ urls: { realtime: 'http://127.0.0.1:9' } })
  try {
    const refused = await handshake(Number(new URL(gone.url).port), `/realtime/v1/websocket?apikey=${PUBLISHABLE}`)
    await refused.closed
    assert.match(refused.head, /^HTTP\/1\.1 502 /)
    assert.match(refused.received().toString(), /The realtime service could not be reached/)
  } finally {
    await gone.close()
  }
})

/**
 * A socket relayed to a fresh upstream, its 101 read and the upstream's side open, with authgate's
 * log lines kept: the stop tests' start. `closed()` is the relay's one "websocket closed" line.
 */
async function relayedSocketWithLogs() {
  const up = await startSocketUpstream()
  const logs = logCapture()
  const h = await withServices({ urls: { realtime: up.url } }, {}, { logger: { stream: logs.stream } })
  const client = await handshake(Number(new URL(h.url).port), `/realtime/v1/websocket?apikey=${PUBLISHABLE}`)
  assert.match(client.head, / 101 /)
  await until(() => up.sockets.length === 1)
  return {
    up,
    h,
    client,
    closed: () => logs.lines.find((l) => l.msg === 'websocket closed'),
    close: async () => {
      await h.close().catch(() => {})
      await up.close()
    },
  }
}

test('stopping authgate sends each client a close frame 1001 after the frame Realtime is in the middle of', async () => {
  const { up, h, client, closed, close } = await relayedSocketWithLogs()
  try {
    // A 300-byte text frame from Realtime (16-bit length), its first part sent before the stop.
    const payload = Buffer.alloc(300, 0x61)
    const frame = Buffer.concat([Buffer.from([0x81, 126, 300 >> 8, 300 & 0xff]), payload])
    up.sockets[0]!.write(frame.subarray(0, 100))
    await until(() => client.received().length === 100)
    const stopped = h.close()
    await new Promise((r) => setTimeout(r, 100))
    assert.equal(client.socket.destroyed, false, 'held until the frame is whole')
    up.sockets[0]!.write(frame.subarray(100))
    await client.closed
    await stopped
    assert.ok(client.received().equals(Buffer.concat([frame, Buffer.from([0x88, 0x02, 0x03, 0xe9])])))
    assert.equal(closed()?.closeCode, 1001)
    assert.equal(closed()?.closedWithoutFrame, undefined)
  } finally {
    await close()
  }
})

test("a socket whose Realtime frame does not end within the stop's grace is cut, and its log line says it got no close frame", async () => {
  const { up, h, client, closed, close } = await relayedSocketWithLogs()
  try {
    // The head of a 300-byte frame and part of it; the rest never comes.
    up.sockets[0]!.write(Buffer.concat([Buffer.from([0x81, 126, 300 >> 8, 300 & 0xff]), Buffer.alloc(50, 0x61)]))
    await until(() => client.received().length === 54)
    await h.close()
    await client.closed
    assert.equal(client.received().length, 54, 'no close frame inside the frame in transit')
    assert.equal(closed()?.closedWithoutFrame, true)
    assert.equal(closed()?.closeCode, undefined)
  } finally {
    await close()
  }
})

test('the sockets in the metrics: open now, opened in all, and how long each lived, by service', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url } })
  try {
    const scrape = async () => (await fetch(`${h.url}/metrics`)).text()
    assert.match(await scrape(), /authgate_websocket_connections\{service="realtime"\} 0/)
    const client = await handshake(Number(new URL(h.url).port), `/realtime/v1/websocket?apikey=${PUBLISHABLE}`)
    assert.match(client.head, / 101 /)
    let text = await scrape()
    assert.match(text, /authgate_websocket_connections\{service="realtime"\} 1/)
    assert.match(text, /authgate_websocket_connections_total\{service="realtime"\} 1/)
    assert.match(text, /authgate_websocket_connection_duration_seconds_count\{service="realtime"\} 0/)
    client.socket.destroy()
    for (let i = 0; i < 300 && /authgate_websocket_connections\{service="realtime"\} 1/.test(text); i++) {
      await new Promise((r) => setTimeout(r, 10))
      text = await scrape()
    }
    assert.match(text, /authgate_websocket_connections\{service="realtime"\} 0/)
    assert.match(text, /authgate_websocket_connections_total\{service="realtime"\} 1/)
    assert.match(text, /authgate_websocket_connection_duration_seconds_count\{service="realtime"\} 1/)
  } finally {
    await h.close()
    await up.close()
  }
})

test("behind a trusted proxy the socket's client IP and request id are the proxy's, as on the HTTP routes", async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url } }, { trustedProxies: ['127.0.0.1/32'] })
  try {
    const port = Number(new URL(h.url).port)
    const client = await handshake(
      port,
      `/realtime/v1/websocket?apikey=${PUBLISHABLE}`,
      'X-Forwarded-For: 6.6.6.6, 203.0.113.9\r\nX-Request-Id: lb-1234\r\n',
    )
    assert.match(client.head, /\r\nx-request-id: lb-1234$/)
    assert.equal(up.handshakes[0]!.headers['x-forwarded-for'], '203.0.113.9')
    assert.equal(up.handshakes[0]!.headers['x-request-id'], 'lb-1234')
    client.socket.destroy()
  } finally {
    await h.close()
    await up.close()
  }
  // Not trusted: the socket's own address, whatever the header says.
  const up2 = await startSocketUpstream()
  const direct = await withServices({ urls: { realtime: up2.url } })
  try {
    const client = await handshake(
      Number(new URL(direct.url).port),
      `/realtime/v1/websocket?apikey=${PUBLISHABLE}`,
      'X-Forwarded-For: 203.0.113.9\r\nX-Request-Id: lb-1234\r\n',
    )
    assert.doesNotMatch(client.head, /lb-1234/)
    assert.equal(up2.handshakes[0]!.headers['x-forwarded-for'], '127.0.0.1')
    client.socket.destroy()
  } finally {
    await direct.close()
    await up2.close()
  }
})

test('an Upgrade elsewhere stays an ordinary request', async () => {
  const h = await withServices()
  try {
    const res = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(h.url).port), '127.0.0.1')
      let data = ''
      socket.on('data', (c) => (data += c.toString()))
      socket.on('close', () => resolve(data))
      socket.on('error', reject)
      socket.write(
        `GET /rest/v1/todos HTTP/1.1\r\nHost: x\r\napikey: ${PUBLISHABLE}\r\nConnection: Upgrade, close\r\nUpgrade: h2c\r\n\r\n`,
      )
    })
    assert.match(res, /^HTTP\/1\.1 200 /)
    assert.equal(h.upstream.requests[0]!.headers.upgrade, undefined)
  } finally {
    await h.close()
  }
})

test('the socket handshake derives the client as the HTTP routes do: ports dropped, forged identity headers stripped, the proxy’s host and scheme', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url } }, { trustedProxies: ['127.0.0.1/32'] })
  try {
    const port = Number(new URL(h.url).port)
    const client = await handshake(
      port,
      `/realtime/v1/websocket?apikey=${PUBLISHABLE}`,
      'X-Forwarded-For: 203.0.113.9:40000\r\nTrue-Client-IP: 6.6.6.6\r\nCF-Connecting-IP: 6.6.6.7\r\n' +
        'X-Forwarded-Host: api.example.com\r\nX-Forwarded-Proto: https\r\n',
    )
    assert.match(client.head, /^HTTP\/1\.1 101 /)
    const sent = up.handshakes[0]!.headers
    assert.equal(sent['x-forwarded-for'], '203.0.113.9')
    assert.equal(sent['true-client-ip'], undefined)
    assert.equal(sent['cf-connecting-ip'], undefined)
    assert.equal(sent['x-forwarded-host'], 'api.example.com')
    assert.equal(sent['x-forwarded-proto'], 'https')
    client.socket.destroy()
    // Two Host headers: refused, as on every HTTP route, and nothing reaches Realtime.
    const twice = await handshake(port, `/realtime/v1/websocket?apikey=${PUBLISHABLE}`, 'Host: evil.example\r\n')
    assert.match(twice.head, /^HTTP\/1\.1 400 /)
    await twice.closed
    assert.equal(up.handshakes.length, 1)
  } finally {
    await h.close()
    await up.close()
  }
})

test('a socket handshake with no Host, or a Host holding a list, is refused 400 and never reaches Realtime', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url } })
  const port = Number(new URL(h.url).port)
  const send = (hostLine: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1')
      let text = ''
      socket.on('data', (c: Buffer) => (text += c.toString('latin1')))
      socket.on('error', reject)
      socket.on('close', () => resolve(text))
      socket.write(
        `GET /realtime/v1/websocket?apikey=${PUBLISHABLE} HTTP/1.1\r\n${hostLine}Upgrade: websocket\r\n` +
          'Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      )
    })
  try {
    assert.match(await send(''), /^HTTP\/1\.1 400 [^]*must carry a Host header/)
    assert.match(await send('Host: api.example.test, evil.example\r\n'), /^HTTP\/1\.1 400 [^]*one Host header/)
    assert.equal(up.handshakes.length, 0)
  } finally {
    await h.close()
    await up.close()
  }
})

test(
  'with cookie sessions, a stand-in the socket cannot swap is not sent on: the socket closes with 1008 (a page in Chromium)',
  { skip: (await chromiumUnavailableReason()) ?? false, timeout: 120_000 },
  async () => {
    const up = await startSocketUpstream()
    // No echo: the client's masked frames sent back would reach the page before the close frame at
    // times, and Chromium fails a socket whose server masks a frame (1006), whatever authgate sends.
    up.mode = 'quiet'
    const key = { id: 'k1', key: randomBytes(32) }
    const h = await withServices({ urls: { realtime: up.url } }, {}, { sessions: { mode: 'on', keys: [key] } })
    h.upstream.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"access_token":"real-access","refresh_token":"real-refresh","expires_in":3600,"user":{"id":"u"}}')
    }
    // localhost, not 127.0.0.1: the page's origin is the one its Host names, and the cookie is `__Host-`.
    const origin = `http://localhost:${new URL(h.url).port}`
    const browser = await launchChromium()
    try {
      const context = await browser.newContext()
      const page = await context.newPage()
      await page.goto(`${origin}/auth/settings`)
      // The page signs in: the browser keeps the cookie, the page gets a stand-in.
      const standIn = (await page.evaluate(async () => {
        const res = await fetch('/auth/token?grant_type=password', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"email":"a@example.com","password":"secret123"}',
        })
        return ((await res.json()) as { access_token: string }).access_token
      })) as string
      const cookie = (await context.cookies(origin)).find((c) => c.name.endsWith('authgate-session'))!
      const active = (await h.app.authgate.sessions!.sessions.load(cookie.value))!
      const stale = new StandIns([{ id: 'ka', key: randomBytes(32) }]).access(
        active.handle,
        'real-access',
        9_999_999_999,
      )
      const foreign = new StandIns([key]).access('another-handle', 'real-access', 9_999_999_999)
      /** Opens the socket from the page, sends a join per token once open; the close code and reason. */
      const socket = (tokens: string[]) =>
        page.evaluate(
          ([url, list]) =>
            new Promise<{ code: number; reason: string }>((resolve) => {
              const ws = new WebSocket(url)
              ws.onopen = () =>
                list.forEach((token, i) =>
                  ws.send(
                    JSON.stringify([
                      `${i + 1}`,
                      `${i + 1}`,
                      'realtime:room',
                      'phx_join',
                      { config: {}, access_token: token },
                    ]),
                  ),
                )
              ws.onclose = (event) => resolve({ code: event.code, reason: event.reason })
            }),
          [`${origin.replace('http', 'ws')}/realtime/v1/websocket?apikey=${PUBLISHABLE}&vsn=2.0.0`, tokens] as const,
        )
      // A stand-in of the session is swapped: Realtime gets the real token. Then one made under a
      // key no longer configured, and a message after it: neither reaches Realtime, and the page's
      // socket closes with 1008 naming the fault.
      const retired = await socket([standIn, stale, standIn])
      assert.equal(up.handshakes.length, 1)
      assert.equal(up.handshakes[0]!.headers.origin, origin)
      const texts = clientTexts(Buffer.concat(up.received))
      assert.equal(texts.length, 1, 'nothing after the refused stand-in reached Realtime')
      assert.equal(JSON.parse(texts[0]!)[4].access_token, 'real-access')
      assert.deepEqual(retired, { code: 1008, reason: 'stand-in token refused: retired' })
      // Another session's stand-in (valid key) is refused the same way, as the HTTP routes refuse it.
      const before = Buffer.concat(up.received).length
      assert.deepEqual(await socket([foreign]), { code: 1008, reason: 'stand-in token refused: other_session' })
      assert.equal(Buffer.concat(up.received).length, before)
    } finally {
      await browser.close()
      await h.close()
      await up.close()
    }
  },
)

test('a per-client limit on the socket route counts handshakes: past it 429 in our shape with Retry-After, Realtime not asked', async () => {
  const up = await startSocketUpstream()
  const rateLimit = loadRateLimitSettings({
    AUTHGATE_RATE_LIMITED_ROUTES: 'none',
    AUTHGATE_RATE_LIMIT_ROUTES: 'GET /realtime/v1/websocket=2/1m',
  })
  const h = await withServices({ urls: { realtime: up.url } }, {}, { rateLimit })
  const port = Number(new URL(h.url).port)
  const target = `/realtime/v1/websocket?apikey=${PUBLISHABLE}&vsn=1.0.0`
  try {
    for (let i = 0; i < 2; i++) assert.match((await handshake(port, target)).head, /^HTTP\/1\.1 101 /)
    for (let i = 0; i < 3; i++) {
      const refused = await handshake(port, target)
      assert.match(refused.head, /^HTTP\/1\.1 429 /)
      assert.match(refused.head, /\r\nretry-after: [1-9]\d*\r\n/i)
      assert.match(refused.head, /\r\nratelimit-policy: "realtime-v1-websocket";q=2;w=60/i)
      await refused.closed
      assert.deepEqual(JSON.parse(refused.received().toString()), {
        code: 'over_request_rate_limit',
        message: 'Request rate limit reached',
      })
    }
    assert.equal(up.handshakes.length, 2, 'the refused handshakes never reached Realtime')
    const text = await (await fetch(`${h.url}/metrics`)).text()
    assert.match(text, /authgate_rate_limit_denied_total\{limit="client",route="GET \/realtime\/v1\/websocket"\} 3/)
  } finally {
    await h.close()
    await up.close()
  }
})

test('a socket handshake with two Authorization or two apikey headers is refused 400 and never reaches Realtime', async () => {
  const up = await startSocketUpstream()
  const h = await withServices({ urls: { realtime: up.url } })
  const port = Number(new URL(h.url).port)
  const target = `/realtime/v1/websocket?apikey=${PUBLISHABLE}&vsn=1.0.0`
  try {
    // Realtime's Cowboy joins repeated headers into one value: the key authgate judged would not be
    // the one Realtime reads.
    for (const extra of [
      `apikey: ${PUBLISHABLE}\r\napikey: ${ANON}\r\n`,
      `Authorization: Bearer ${ANON}\r\nauthorization: Bearer x\r\n`,
    ]) {
      const refused = await handshake(port, target, extra)
      assert.match(refused.head, /^HTTP\/1\.1 400 /)
      await refused.closed
      assert.deepEqual(JSON.parse(refused.received().toString()), {
        code: 'malformed_request',
        message: `A request to a service must carry one ${extra.startsWith('apikey') ? 'apikey' : 'Authorization'} header`,
      })
    }
    assert.equal(up.handshakes.length, 0)
    assert.match((await handshake(port, target, `apikey: ${PUBLISHABLE}\r\n`)).head, /^HTTP\/1\.1 101 /)
  } finally {
    await h.close()
    await up.close()
  }
})
