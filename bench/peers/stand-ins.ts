/**
 * The bench's stand-ins for the services whose answers nginx cannot play (bench/peers/backend.nginx.conf
 * plays the rest), in one process beside the peers:
 *
 *   node bench/peers/stand-ins.ts <realtime port> <storage port>
 *
 * - Realtime: any WebSocket handshake gets 101, then each of the client's (masked) frames is echoed
 *   back as a server (unmasked) frame: a text frame as text, a ping as a pong, a close as a close
 *   that ends the socket. No Phoenix semantics: the relay under test only moves frames. Stopped
 *   (`stop()`), it ends each socket with a close frame 1001 (going away), as a server that restarts.
 * - Storage: `GET /object/bench/10mb` answers a 10 MiB object, `GET /object/bench/512kb` a 512 KiB
 *   one; `POST /object/bench/upload` reads the whole body, then answers as Storage does. (nginx answers before it has read a request body, so a
 *   relay would be measured on a race, not on an upload.)
 */
import { createHash } from 'node:crypto'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type Socket } from 'node:net'

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
export const OBJECT_BYTES = 10 * 1024 * 1024
export const SMALL_OBJECT_BYTES = 512 * 1024
/** A close frame with 1001 (going away). */
const GOING_AWAY_FRAME = Buffer.from([0x88, 0x02, 0x03, 0xe9])

/** The stand-in Realtime server: a 101 for any handshake, then each client frame echoed unmasked. */
export function serveRealtime(port: number): { listening: Promise<void>; stop(): Promise<void> } {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    socket.on('close', () => sockets.delete(socket))
    socket.setNoDelay(true)
    let head: Buffer = Buffer.alloc(0)
    let upgraded = false
    let pending: Buffer = Buffer.alloc(0)
    socket.on('error', () => socket.destroy())
    socket.on('data', (chunk: Buffer) => {
      if (!upgraded) {
        head = Buffer.concat([head, chunk])
        const end = head.indexOf('\r\n\r\n')
        if (end === -1) return
        const key = /\r\nsec-websocket-key:\s*(\S+)/i.exec(head.toString('latin1', 0, end))?.[1] ?? ''
        const accept = createHash('sha1')
          .update(key + GUID)
          .digest('base64')
        socket.write(
          `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
        )
        upgraded = true
        sockets.add(socket)
        chunk = head.subarray(end + 4)
        if (chunk.length === 0) return
      }
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      const out: Buffer[] = []
      let at = 0
      let closing = false
      // Short masked frames only (the client's): 2 bytes of head, 4 of mask, the payload.
      while (pending.length - at >= 6) {
        const length = pending[at + 1]! & 0x7f
        if (pending.length - at < 6 + length) break
        const mask = pending.subarray(at + 2, at + 6)
        const opcode = pending[at]! & 0x0f
        const frame = Buffer.allocUnsafe(2 + length)
        // A ping is answered with a pong, a close with a close; anything else goes back as text.
        frame[0] = opcode === 0x9 ? 0x8a : opcode === 0x8 ? 0x88 : 0x81
        closing ||= opcode === 0x8
        frame[1] = length
        for (let i = 0; i < length; i++) frame[2 + i] = pending[at + 6 + i]! ^ mask[i % 4]!
        out.push(frame)
        at += 6 + length
      }
      pending = pending.subarray(at)
      if (out.length > 0) socket.write(out.length === 1 ? out[0]! : Buffer.concat(out))
      if (closing) socket.end()
    })
  })
  server.listen(port, '127.0.0.1')
  return {
    listening: new Promise((resolve) => server.once('listening', resolve)),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of sockets) socket.end(GOING_AWAY_FRAME)
      }),
  }
}

/** The stand-in Storage server: two objects to download, one path to upload to. */
export function serveStorage(port: number): void {
  const objects = new Map([
    ['/object/bench/10mb', Buffer.alloc(OBJECT_BYTES, 'authgate ')],
    ['/object/bench/512kb', Buffer.alloc(SMALL_OBJECT_BYTES, 'authgate ')],
  ])
  createHttpServer((req, res) => {
    const object = req.method === 'GET' ? objects.get(req.url ?? '') : undefined
    if (object !== undefined) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': object.length })
      res.end(object)
      return
    }
    if (req.method === 'POST' && req.url === '/object/bench/upload') {
      let bytes = 0
      req.on('data', (c: Buffer) => (bytes += c.length))
      req.on('end', () => {
        const body = JSON.stringify({ Key: 'bench/upload', Id: 'b3c1e2d4', bytes })
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        res.end(body)
      })
      return
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"statusCode":"404","error":"not_found"}')
  }).listen(port, '127.0.0.1').keepAliveTimeout = 300_000
}

if (import.meta.url === `file://${process.argv[1]}`) {
  serveRealtime(Number(process.argv[2]))
  serveStorage(Number(process.argv[3]))
}
