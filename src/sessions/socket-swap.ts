import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { Transform, type TransformCallback } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import { sessionIdFrom } from './cookie.ts'
import type { SessionGate } from './gate.ts'

/**
 * Realtime's socket with cookie sessions: realtime-js sends the session's access token in its
 * Phoenix messages (`phx_join`'s and `access_token`'s `access_token`), which in cookie mode is a
 * stand-in (src/sessions/stand-ins.ts). The client's frames pass through a parser that reads only
 * the small, whole, unfragmented text frames that can carry one, swaps a stand-in of the
 * handshake's cookie session for the real token, and passes every other byte as it came (RFC 6455
 * §5.2 framing). A stand-in it reads and cannot swap (another session's, expired, forged, made
 * under a key no longer configured, its session ended) is not sent on: the relay closes the
 * socket with 1008 (policy violation), the reason naming the fault.
 */

/** Largest client frame read whole for a token: a join or `access_token` message is a few KiB. */
const MAX_READ = 64 * 1024
const EMPTY = Buffer.alloc(0)
const EVENTS = new Set(['phx_join', 'access_token'])

/**
 * The real token for a stand-in, undefined to leave the message as it came (it holds none), or a
 * refusal: a stand-in that cannot be swapped is not sent on.
 */
export type TokenSwap = (token: string) => Promise<string | undefined | { refused: string }>

interface FrameHead {
  fin: boolean
  rsv: number
  opcode: number
  masked: boolean
  /** Payload length. */
  length: number
  /** Header length, mask included. */
  size: number
}

function frameHead(data: Buffer): FrameHead | undefined {
  if (data.length < 2) return undefined
  const masked = (data[1]! & 0x80) !== 0
  let length = data[1]! & 0x7f
  let size = 2
  if (length === 126) {
    if (data.length < 4) return undefined
    length = data.readUInt16BE(2)
    size = 4
  } else if (length === 127) {
    if (data.length < 10) return undefined
    length = Number(data.readBigUInt64BE(2))
    size = 10
  }
  if (masked) size += 4
  if (data.length < size) return undefined
  return { fin: (data[0]! & 0x80) !== 0, rsv: data[0]! & 0x70, opcode: data[0]! & 0x0f, masked, length, size }
}

/** A client text frame (FIN, opcode 1, masked with a new key) carrying `text`. */
export function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text)
  const n = payload.length
  const head = n < 126 ? Buffer.from([0x81, 0x80 | n]) : n < 65_536 ? Buffer.alloc(4) : Buffer.alloc(10)
  if (n >= 126 && n < 65_536) {
    head[0] = 0x81
    head[1] = 0x80 | 126
    head.writeUInt16BE(n, 2)
  } else if (n >= 65_536) {
    head[0] = 0x81
    head[1] = 0x80 | 127
    head.writeBigUInt64BE(BigInt(n), 2)
  }
  const mask = randomBytes(4)
  for (let i = 0; i < n; i++) payload[i]! ^= mask[i % 4]!
  return Buffer.concat([head, mask, payload])
}

/**
 * The client's frames, with stand-ins in Phoenix token messages swapped; everything else untouched.
 * A stand-in the swap refuses is not sent on, nor is anything after it: the stream emits `refused`
 * (with the reason) and passes no more bytes, and the relay closes the socket.
 */
export class PhoenixTokenSwap extends Transform {
  readonly #swap: TokenSwap
  #pending: Buffer = EMPTY
  /** Bytes of the current frame still to pass as they are. */
  #passing = 0
  #refused = false

  constructor(swap: TokenSwap) {
    super()
    this.#swap = swap
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#work(chunk).then(
      () => done(),
      (err: unknown) => done(err as Error),
    )
  }

  override _flush(done: TransformCallback): void {
    if (this.#pending.length > 0 && !this.#refused) this.push(this.#pending)
    done()
  }

  async #work(chunk: Buffer): Promise<void> {
    let rest = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk])
    this.#pending = EMPTY
    while (rest.length > 0) {
      if (this.#refused) return
      if (this.#passing > 0) {
        const n = Math.min(this.#passing, rest.length)
        this.push(rest.subarray(0, n))
        this.#passing -= n
        rest = rest.subarray(n)
        continue
      }
      const head = frameHead(rest)
      if (head === undefined) {
        this.#pending = rest
        return
      }
      const readable = head.fin && head.rsv === 0 && head.opcode === 1 && head.masked && head.length <= MAX_READ
      if (!readable) {
        this.push(rest.subarray(0, head.size))
        this.#passing = head.length
        rest = rest.subarray(head.size)
        continue
      }
      const total = head.size + head.length
      if (rest.length < total) {
        this.#pending = rest
        return
      }
      const frame = await this.#rewrite(rest.subarray(0, total), head)
      if (frame === undefined) return
      this.push(frame)
      rest = rest.subarray(total)
    }
  }

  /** The frame to send on, or undefined when its stand-in was refused (nothing more is sent). */
  async #rewrite(frame: Buffer, head: FrameHead): Promise<Buffer | undefined> {
    const mask = frame.subarray(head.size - 4, head.size)
    const payload = Buffer.from(frame.subarray(head.size))
    for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!
    const text = payload.toString('utf8')
    if (!text.includes('access_token')) return frame
    let message: unknown
    try {
      message = JSON.parse(text)
    } catch {
      return frame
    }
    // Phoenix's serializer 2.0.0: [join_ref, ref, topic, event, payload].
    if (!Array.isArray(message) || message.length !== 5 || !EVENTS.has(message[3] as string)) return frame
    const body = message[4] as { access_token?: unknown } | null
    if (typeof body !== 'object' || body === null || typeof body.access_token !== 'string') return frame
    const real = await this.#swap(body.access_token)
    if (real === undefined) return frame
    if (typeof real !== 'string') {
      this.#refused = true
      this.emit('refused', real.refused)
      return undefined
    }
    body.access_token = real
    return maskedTextFrame(JSON.stringify(message))
  }
}

export interface SocketSwapContext {
  clientIp: string
  requestId: string
  /** The scheme the handshake came on (the socket's own: `https` when TLS ends here). */
  proto: string
  log: FastifyBaseLogger
}

/**
 * The swap for one Realtime socket, or undefined when its handshake brings no session cookie, or
 * comes from an origin the cookie may not be used from (browsers always send `Origin` on a
 * WebSocket handshake, and `SameSite=Lax` sends the cookie from sibling sites): stand-ins then
 * reach Realtime as they are, and it refuses them.
 */
export function phoenixSwap(
  gate: SessionGate,
  req: IncomingMessage,
  context: SocketSwapContext,
): PhoenixTokenSwap | undefined {
  const sessions = gate.sessions
  const config = sessions.config
  const id = sessionIdFrom(req.headers.cookie, config.cookieName)
  if (id === undefined) return undefined
  const origin = req.headers.origin
  const own = `${context.proto}://${req.headers.host ?? ''}`
  if (origin === undefined || (origin !== own && !config.allowedOrigins.includes(origin))) {
    context.log.warn({ origin }, 'cookie session: a socket from an origin not allowed gets no stand-in swap')
    return undefined
  }
  return new PhoenixTokenSwap(async (token) => {
    if (!sessions.standIns.isAccess(token)) return undefined
    // As on the HTTP routes (401 there), a stand-in that does not stand for the handshake's session
    // is not sent on: Realtime never sees it, and the socket is closed.
    let fault: string | undefined = 'retired'
    try {
      if (!sessions.standIns.isRetired(token)) {
        const active = await sessions.use(
          id,
          { clientIp: context.clientIp, requestId: context.requestId },
          { revalidate: true },
        )
        fault =
          active === undefined
            ? 'session_ended'
            : sessions.standIns.checkAccess(token, active.handle, Math.floor(sessions.now() / 1000))
        if (fault === undefined) return active!.session.accessToken
      }
    } catch (err) {
      context.log.warn({ err }, 'cookie session: a stand-in on the socket could not be swapped')
      return { refused: 'session_unavailable' }
    }
    context.log.info({ reason: fault }, 'cookie session: a stand-in on the socket was refused')
    return { refused: fault }
  })
}
