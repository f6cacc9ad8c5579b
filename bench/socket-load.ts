/**
 * Realtime's socket for the bench: a client that sends Phoenix messages through a relay to the
 * stand-in Realtime server (bench/peers/stand-ins.ts, which echoes each frame) and counts them back.
 * `socketMessages()` opens `sockets` sockets through the relay, keeps `window` messages in flight
 * on each (a new one sent as each echo comes back) and counts the echoes. A message is a realtime-js
 * broadcast (about 120 bytes), the kind an app sends most.
 *
 * Plain sockets and prebuilt frames, so the client costs little of a shared machine.
 */
import { randomBytes } from 'node:crypto'
import { connect, type Socket } from 'node:net'

/** A realtime-js broadcast, as serializer 2.0.0 sends it. */
export const MESSAGE = JSON.stringify([
  '1',
  '2',
  'realtime:room-1',
  'broadcast',
  { type: 'broadcast', event: 'cursor', payload: { x: 120, y: 348, user: 'u-8f2c9a52' } },
])

/** One client text frame (FIN, opcode 1, masked), the same bytes every time. */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text)
  if (payload.length >= 126) throw new Error('the bench message fits a short frame')
  const mask = randomBytes(4)
  for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload])
}

export interface SocketRunResult {
  /** Echoes counted per second. */
  messagesPerSecond: number
  messages: number
  /** Sockets that did not get their 101. */
  failed: number
}

/** A socket through the relay once its 101 has come: the bytes after the handshake's head, and the socket. */
interface Upgraded {
  socket: Socket
  rest: Buffer
}

/** Opens a socket to `path` on `port` and completes its handshake: undefined when no 101 comes. */
function upgrade(port: number, path: string, headers: Record<string, string>): Promise<Upgraded | undefined> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.setNoDelay(true)
    let head: Buffer = Buffer.alloc(0)
    const fail = () => {
      socket.destroy()
      resolve(undefined)
    }
    socket.on('error', fail)
    socket.on('connect', () => {
      let request = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n`
      for (const [k, v] of Object.entries(headers)) request += `${k}: ${v}\r\n`
      socket.write(request + '\r\n')
    })
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      const end = head.indexOf('\r\n\r\n')
      if (end === -1) return
      socket.off('data', onData)
      socket.off('error', fail)
      socket.on('error', () => {})
      if (!head.subarray(0, 12).toString('latin1').includes(' 101')) return fail()
      resolve({ socket, rest: head.subarray(end + 4) })
    }
    socket.on('data', onData)
  })
}

/**
 * `sockets` sockets to `path` on `port`, opened once, through which `run(n)` sends exactly `n`
 * messages, `window` in flight on each (a new one sent as each echo comes back), and resolves when
 * all `n` echoes are back: a fixed amount of work, for bench/instructions.ts's instruction counts,
 * where a rate over a time would measure callgrind's speed.
 */
export async function openSockets(options: {
  port: number
  path: string
  headers?: Record<string, string>
  sockets?: number
  window?: number
}): Promise<{ failed: number; run(n: number): Promise<void>; close(): void }> {
  const window = options.window ?? 32
  const frame = clientFrame(MESSAGE)
  const echoSize = 2 + Buffer.byteLength(MESSAGE)
  const opened = await Promise.all(
    Array.from({ length: options.sockets ?? 16 }, () => upgrade(options.port, options.path, options.headers ?? {})),
  )
  const open = opened.filter((u) => u !== undefined)
  for (const u of open) if (u.rest.length > 0) throw new Error('the relay sent frames before any message')
  let onEcho: (socket: Socket, whole: number) => void = () => {}
  let closed = 0
  for (const { socket } of open) {
    let partial = 0
    socket.on('data', (chunk: Buffer) => {
      partial += chunk.length
      const whole = Math.floor(partial / echoSize)
      partial -= whole * echoSize
      if (whole > 0) onEcho(socket, whole)
    })
    socket.on('close', () => closed++)
  }
  const send = (socket: Socket, k: number) => socket.write(Buffer.concat(Array.from({ length: k }, () => frame)))
  return {
    failed: opened.length - open.length,
    run(n: number): Promise<void> {
      return new Promise((resolve, reject) => {
        if (closed > 0) return reject(new Error(`${closed} sockets closed`))
        let sent = 0
        let echoed = 0
        onEcho = (socket, whole) => {
          echoed += whole
          if (echoed >= n) {
            onEcho = () => {}
            if (echoed > n) reject(new Error(`${echoed} echoes for ${n} messages`))
            else resolve()
            return
          }
          const k = Math.min(whole, n - sent)
          if (k > 0) {
            sent += k
            send(socket, k)
          }
        }
        for (const { socket } of open) {
          const k = Math.min(window, n - sent)
          if (k === 0) break
          sent += k
          send(socket, k)
        }
      })
    },
    close() {
      for (const { socket } of open) socket.destroy()
    },
  }
}

/**
 * `sockets` sockets to `path` on `port`, `window` messages in flight on each, for `seconds`: the
 * echoes that came back per second. `headers` go on each handshake (the cookie, the origin).
 */
export async function socketMessages(options: {
  port: number
  path: string
  headers?: Record<string, string>
  seconds: number
  sockets?: number
  window?: number
}): Promise<SocketRunResult> {
  const { port, path, seconds } = options
  const sockets = options.sockets ?? 16
  const window = options.window ?? 32
  const frame = clientFrame(MESSAGE)
  const echoSize = 2 + Buffer.byteLength(MESSAGE)
  const burst = Buffer.concat(Array.from({ length: window }, () => frame))
  let messages = 0
  let failed = 0
  let running = true
  const open: Socket[] = []
  await Promise.all(
    Array.from(
      { length: sockets },
      () =>
        new Promise<void>((resolve) => {
          const socket = connect(port, '127.0.0.1')
          socket.setNoDelay(true)
          open.push(socket)
          let head: Buffer = Buffer.alloc(0)
          let upgraded = false
          let partial = 0
          socket.on('error', () => {
            if (!upgraded) failed++
            resolve()
          })
          socket.on('connect', () => {
            let request = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n`
            for (const [k, v] of Object.entries(options.headers ?? {})) request += `${k}: ${v}\r\n`
            socket.write(request + '\r\n')
          })
          socket.on('data', (chunk: Buffer) => {
            if (!upgraded) {
              head = Buffer.concat([head, chunk])
              const end = head.indexOf('\r\n\r\n')
              if (end === -1) return
              if (!head.subarray(0, 12).toString('latin1').includes(' 101')) {
                failed++
                socket.destroy()
                resolve()
                return
              }
              upgraded = true
              resolve()
              chunk = head.subarray(end + 4)
            }
            // Every echo has the same size: whole echoes in this chunk are answered by as many messages.
            partial += chunk.length
            const whole = Math.floor(partial / echoSize)
            partial -= whole * echoSize
            if (whole === 0 || !upgraded) return
            if (running) {
              messages += whole
              socket.write(whole === window ? burst : Buffer.concat(Array.from({ length: whole }, () => frame)))
            }
          })
        }),
    ),
  )
  // The clock starts once every socket is open; each sends its first window.
  const ready = open.filter((s) => !s.destroyed)
  messages = 0
  const startedAt = performance.now()
  for (const s of ready) s.write(burst)
  await new Promise((r) => setTimeout(r, seconds * 1000))
  running = false
  const elapsed = (performance.now() - startedAt) / 1000
  const counted = messages
  for (const s of open) s.destroy()
  return { messagesPerSecond: counted / elapsed, messages: counted, failed }
}
