/**
 * AUTHGATE_MAX_CONNECTIONS: beyond it a new connection is closed at once, counted and logged; the
 * connections already open are served, and a slot freed is taken again.
 */
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { AddressInfo } from 'node:net'
import { buildApp } from '../../src/app.ts'
import { loadCoreConfig, resolveConfig } from '../../src/config.ts'
import { startFakeBackend } from '../support/fake-backend.ts'
import { logCapture } from '../support/log-capture.ts'

const REQUEST = 'GET /auth/settings HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'

/** A connection that sends one request; resolves with what it received once answered, or closed unanswered. */
function exchange(port: number): Promise<{ socket: Socket; answer: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(REQUEST))
    let answer = ''
    socket.on('data', (d: Buffer) => {
      answer += d.toString('latin1')
      if (answer.includes('\r\n\r\n')) resolve({ socket, answer, closed: false })
    })
    socket.on('error', () => undefined)
    socket.on('close', () => resolve({ socket, answer, closed: true }))
  })
}

describe('AUTHGATE_MAX_CONNECTIONS', () => {
  it('is 10000 by default, 0 for no limit, and read from the environment', () => {
    assert.equal(resolveConfig({}).maxConnections, 10_000)
    assert.equal(loadCoreConfig({ AUTHGATE_MAX_CONNECTIONS: '0' }).maxConnections, 0)
    assert.equal(loadCoreConfig({ AUTHGATE_MAX_CONNECTIONS: '250' }).maxConnections, 250)
    assert.throws(() => loadCoreConfig({ AUTHGATE_MAX_CONNECTIONS: '-1' }), /AUTHGATE_MAX_CONNECTIONS/)
    assert.throws(() => resolveConfig({ maxConnections: 1.5 }), /maxConnections/)
  })

  it('no limit leaves the server as Node.js makes it', async () => {
    const backend = await startFakeBackend()
    const app = await buildApp({ rateLimit: false, config: { backendUrl: backend.url, maxConnections: 0 } })
    try {
      await app.ready()
      assert.ok(!Number.isFinite(app.server.maxConnections), 'no limit set')
    } finally {
      await app.close()
      await backend.close()
    }
  })

  it('beyond the limit a new connection is closed unanswered; open ones are served; a freed slot is taken', async () => {
    const backend = await startFakeBackend()
    const logs = logCapture()
    const app = await buildApp({
      rateLimit: false,
      logger: { stream: logs.stream },
      config: { backendUrl: backend.url, cacheTtlMs: 0, maxConnections: 5 },
    })
    const sockets: Socket[] = []
    try {
      await app.listen({ port: 0, host: '127.0.0.1' })
      const port = (app.server.address() as AddressInfo).port
      for (let i = 0; i < 5; i++) {
        const r = await exchange(port)
        sockets.push(r.socket)
        assert.match(r.answer, /^HTTP\/1\.1 200 /, `connection ${i + 1} of 5 is served`)
      }
      for (let i = 0; i < 3; i++) {
        const r = await exchange(port)
        assert.deepEqual({ closed: r.closed, answer: r.answer }, { closed: true, answer: '' }, 'over the limit')
      }
      // An open connection is still served.
      const again = await new Promise<string>((resolve) => {
        sockets[0]!.once('data', (d: Buffer) => resolve(d.toString('latin1')))
        sockets[0]!.write(REQUEST)
      })
      assert.match(again, /^HTTP\/1\.1 200 /)
      // A slot freed is taken again (the server counts the close once it has seen it).
      sockets.shift()!.destroy()
      let next = await exchange(port)
      for (let i = 0; next.closed && i < 100; i++) {
        await sleep(20)
        next = await exchange(port)
      }
      assert.match(next.answer, /^HTTP\/1\.1 200 /)
      sockets.push(next.socket)

      const metrics = await app.inject({ method: 'GET', url: '/metrics' })
      const dropped = Number(/^authgate_connections_dropped_total (\d+)$/m.exec(metrics.body)?.[1])
      assert.ok(dropped >= 3, `dropped counted: ${dropped}`)
      const warned = logs.lines.filter((l) => String(l.msg).startsWith('connection limit reached'))
      assert.equal(warned.length, 1, 'one line for the burst (then at most one per 10 s)')
      assert.equal(warned[0]!.maxConnections, 5)
      assert.equal(warned[0]!.level, 40)
    } finally {
      for (const s of sockets) s.destroy()
      await app.close()
      await backend.close()
    }
  })
})
