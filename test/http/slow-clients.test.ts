/**
 * Chaos: 5,000 idle keep-alive connections, a slow-header (slowloris) flood and a slow-body flood on
 * authgate (the service process, configured from its environment) while normal traffic continues.
 * Held: normal traffic is answered in full, every request 200; each slow client is cut off with our
 * 408 once its timeout has passed (the head within AUTHGATE_HEADER_TIMEOUT, the whole request within
 * AUTHGATE_REQUEST_TIMEOUT), never before; new connections are still accepted and answered. Normal
 * traffic's p99 with and without the flood is reported (RELIABILITY.md).
 *
 * Both ends of every connection count against this machine's descriptors: the idle count is scaled
 * down (and says so) when `ulimit -n` cannot hold 5,000 of them next to the rest.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { constantRate, idleConnections, type RateResult } from '../../bench/load.ts'
import { startGatewayProcess } from '../../e2e/support/gateway-process.ts'
import { reservePort } from '../../scripts/supabase-auth/port.ts'
import { startFakeBackend } from '../support/fake-backend.ts'

const HEADER_TIMEOUT_MS = 2000
const REQUEST_TIMEOUT_MS = 4000
/** Room for a loaded two-core machine on top of a timeout (Node.js checks every 500 ms here). */
const SLACK_MS = 6000
const IDLE_WANTED = 5000
const SLOW_EACH = 200
/** Longer than the backend timeout given to the service (2 s), as the setting requires. */
const SOCKET_TIMEOUT_MS = 4000
const SLOW_READERS = 20
const RATE = 200
/**
 * Twice the request timeout: every first slow client is cut and replaced while the flood lasts (a
 * slow-body one once its timeout and a check have passed, with seconds to spare on a loaded machine).
 */
const FLOOD_MS = 2 * REQUEST_TIMEOUT_MS

/** The soft limit on open files of this process (`ulimit -n`), from /proc; undefined off Linux. */
function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return m ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
}

interface SlowClient {
  openedAt: number
  closedAt?: number
  answer: string
}

/**
 * `count` connections at a time, each sending its request too slowly, for as long as `running()`:
 * a connection the server closes is replaced, as an attacker's tool would.
 */
function slowFlood(
  port: number,
  count: number,
  kind: 'header' | 'body',
  running: () => boolean,
): { clients: SlowClient[]; open: Set<Socket> } {
  const clients: SlowClient[] = []
  const open = new Set<Socket>()
  const start = () => {
    const client: SlowClient = { openedAt: performance.now(), answer: '' }
    clients.push(client)
    const socket = connect(port, '127.0.0.1')
    open.add(socket)
    let timer: NodeJS.Timeout | undefined
    socket.on('connect', () => {
      socket.write(
        kind === 'header'
          ? 'GET /auth/settings HTTP/1.1\r\nHost: 127.0.0.1\r\n'
          : 'POST /auth/signup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"email":"',
      )
      // A header line or a few body bytes a second: never finishing, never idle long enough for a
      // plain inactivity timeout.
      timer = setInterval(() => socket.write(kind === 'header' ? 'X-Slow: 1\r\n' : 'aaaaaaaaaa'), 1000)
    })
    socket.on('data', (d: Buffer) => (client.answer += d.toString('latin1')))
    socket.on('error', () => undefined)
    socket.on('close', () => {
      clearInterval(timer)
      open.delete(socket)
      client.closedAt = performance.now()
      if (running()) start()
    })
  }
  for (let i = 0; i < count; i++) start()
  return { clients, open }
}

const settings = { method: 'GET', path: '/auth/settings' } as const

interface SlowReader {
  socket: Socket
  received: number
  closed: boolean
}

/**
 * Asks for `path` PIPELINED times in a row and stops reading after the first bytes, as a client that
 * never reads its answers. Pipelined, so the answers outgrow any socket buffers: authgate still has
 * bytes to write when the client stops.
 */
const PIPELINED = 4
function slowReader(port: number, path: string): SlowReader {
  const request = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: identity\r\n\r\n`
  const socket = connect(port, '127.0.0.1', () => socket.write(request.repeat(PIPELINED)))
  const reader: SlowReader = { socket, received: 0, closed: false }
  socket.on('data', (d: Buffer) => {
    if (reader.received === 0) socket.pause()
    reader.received += d.length
  })
  socket.on('error', () => undefined)
  socket.on('close', () => (reader.closed = true))
  return reader
}

describe('chaos: idle, slow-header and slow-body clients while normal traffic continues', { timeout: 90_000 }, () => {
  it('normal traffic is served in full; each slow client is cut off at its timeout', async (t) => {
    const limit = openFileLimit()
    // This process holds one end of each connection; the service (another process) the other.
    const idleCount = limit === undefined ? IDLE_WANTED : Math.min(IDLE_WANTED, limit - 2 * SLOW_EACH - 200)
    assert.ok(idleCount >= 100, `ulimit -n is ${limit}: too low for this test`)
    if (idleCount < IDLE_WANTED)
      t.diagnostic(`ulimit -n is ${limit}: ${idleCount} idle connections instead of ${IDLE_WANTED}`)

    const backend = await startFakeBackend()
    const { port, release } = await reservePort()
    await release()
    const gateway = await startGatewayProcess({
      port,
      backendUrl: backend.url,
      env: {
        AUTHGATE_CACHE_TTL: 'off',
        AUTHGATE_RATE_LIMITED_ROUTES: 'none',
        AUTHGATE_HEADER_TIMEOUT: `${HEADER_TIMEOUT_MS}ms`,
        AUTHGATE_REQUEST_TIMEOUT: `${REQUEST_TIMEOUT_MS}ms`,
        AUTHGATE_BACKEND_TIMEOUT: '2s',
        AUTHGATE_SOCKET_TIMEOUT: `${SOCKET_TIMEOUT_MS}ms`,
      },
    })
    const idle: { close?: () => void } = {}
    let flooding = true
    const floods: Array<{ open: Set<Socket> }> = []
    const readers: SlowReader[] = []
    t.after(async () => {
      flooding = false
      for (const f of floods) for (const s of f.open) s.destroy()
      for (const r of readers) r.socket.destroy()
      idle.close?.()
      await gateway.stop()
      await backend.close()
    })

    const normal = (durationMs: number): Promise<RateResult> =>
      // Answers are awaited long after the last request: a slow answer shows in p99, not as an error.
      constantRate({ port, request: settings, rate: RATE, durationMs, connections: 16, drainMs: 15_000 })
    const quiet = await normal(3000)
    // The largest answer authgate serves: the reference page's script (several MB).
    const page = await (await fetch(`http://127.0.0.1:${port}/docs`)).text()
    const script = /<script src="\.\/(docs\/[^"]+\.js)"/.exec(page)?.[1]
    assert.ok(script, 'the reference page names its script')
    const scriptLength = Number(
      (
        await fetch(`http://127.0.0.1:${port}/${script}`, {
          method: 'HEAD',
          headers: { 'accept-encoding': 'identity' },
        })
      ).headers.get('content-length'),
    )
    assert.ok(scriptLength > 1_000_000, `the script is large (${scriptLength} bytes)`)

    const idleStart = performance.now()
    idle.close = await idleConnections(port, settings, idleCount)
    const idleMs = performance.now() - idleStart
    const header = slowFlood(port, SLOW_EACH, 'header', () => flooding)
    const body = slowFlood(port, SLOW_EACH, 'body', () => flooding)
    floods.push(header, body)
    const readersStart = performance.now()
    for (let i = 0; i < SLOW_READERS; i++) readers.push(slowReader(port, `/${script}`))
    const loaded = await normal(FLOOD_MS)
    flooding = false

    // With the idle connections still open, new ones are accepted and answered.
    const stillIdle = await idleConnections(port, settings, 10)
    stillIdle()

    for (const [name, r] of [
      ['without the flood', quiet],
      ['during the flood', loaded],
    ] as const) {
      assert.equal(r.errors, 0, `normal traffic ${name}: no errors (${JSON.stringify(r)})`)
      assert.deepEqual(r.statuses, { 200: r.due }, `normal traffic ${name}: every request answered 200`)
    }

    // Every slow client is judged: those still open when the flood stopped are left to the server.
    const deadline = performance.now() + REQUEST_TIMEOUT_MS + SLACK_MS
    while ((header.open.size > 0 || body.open.size > 0) && performance.now() < deadline) await sleep(100)
    const lifetimes = (clients: SlowClient[]) => clients.map((c) => (c.closedAt ?? Infinity) - c.openedAt)
    for (const [name, clients, timeoutMs] of [
      ['slow header', header.clients, HEADER_TIMEOUT_MS],
      ['slow body', body.clients, REQUEST_TIMEOUT_MS],
    ] as const) {
      assert.ok(clients.length >= 2 * SLOW_EACH, `the ${name} flood ran past its timeout (${clients.length} clients)`)
      const longest = Math.max(...lifetimes(clients))
      assert.ok(
        longest <= timeoutMs + SLACK_MS,
        `a ${name} client was held ${longest.toFixed(0)} ms (timeout ${timeoutMs} ms)`,
      )
      const shortest = Math.min(...lifetimes(clients))
      assert.ok(
        shortest >= timeoutMs - 100,
        `a ${name} client was cut after ${shortest.toFixed(0)} ms, before its timeout`,
      )
      const answers = clients.filter((c) => !c.answer.startsWith('HTTP/1.1 408 '))
      assert.deepEqual(
        answers.map((c) => c.answer.slice(0, 60)),
        [],
        `each ${name} client got our 408`,
      )
    }
    // Slow readers: once the socket timeout has passed (plus room), reading again finds the answer
    // cut short and the connection closed by authgate.
    await sleep(Math.max(0, readersStart + SOCKET_TIMEOUT_MS + SLACK_MS - performance.now()))
    for (const r of readers) r.socket.resume()
    const readDeadline = performance.now() + SLACK_MS
    while (readers.some((r) => !r.closed) && performance.now() < readDeadline) await sleep(100)
    const held = readers.filter((r) => !r.closed || r.received >= PIPELINED * scriptLength)
    assert.deepEqual(
      held.map((r) => ({ closed: r.closed, received: r.received })),
      [],
      `each slow reader was cut off (answers ${PIPELINED} × ${scriptLength} bytes)`,
    )

    const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!
    t.diagnostic(
      `${idleCount} idle keep-alive connections opened in ${(idleMs / 1000).toFixed(1)} s before the flood; ` +
        `${SLOW_EACH} slow-header and ${SLOW_EACH} slow-body clients at a time for ${FLOOD_MS / 1000} s ` +
        `(${header.clients.length} and ${body.clients.length} connections in all); ` +
        `normal traffic ${RATE} req/s: without the flood p99 ${quiet.p99.toFixed(1)} ms (max ${quiet.max.toFixed(0)} ms), ` +
        `during it p99 ${loaded.p99.toFixed(1)} ms (max ${loaded.max.toFixed(0)} ms), ${loaded.due} requests, 0 errors; ` +
        `slow header held ${median(lifetimes(header.clients)).toFixed(0)} ms (median; max ${Math.max(...lifetimes(header.clients)).toFixed(0)}) for a ${HEADER_TIMEOUT_MS} ms timeout, ` +
        `${SLOW_READERS} slow readers (${PIPELINED} pipelined requests each for the ${(scriptLength / 1e6).toFixed(1)} MB script) cut off (socket timeout ${SOCKET_TIMEOUT_MS} ms), having received ${Math.min(...readers.map((r) => r.received))}–${Math.max(...readers.map((r) => r.received))} bytes; ` +
        `slow body ${median(lifetimes(body.clients)).toFixed(0)} ms (max ${Math.max(...lifetimes(body.clients)).toFixed(0)}) for ${REQUEST_TIMEOUT_MS} ms`,
    )
  })
})
