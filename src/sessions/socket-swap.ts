import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'
import { sessionIdFrom } from './cookie.ts'
import type { SessionGate } from './gate.ts'
import { headSize, payloadLength } from '../core/frame-head.ts'
import { forgetCopy, nextCandidate, skipFrames } from './masked-search.ts'

/**
 * Realtime's socket with cookie sessions: realtime-js sends the session's access token in its
 * Phoenix messages (`phx_join`'s and `access_token`'s `access_token`), which in cookie mode is a
 * stand-in (src/sessions/stand-ins.ts). The client's frames pass through a parser that reads only
 * the small, whole, unfragmented text frames that can carry one, swaps a stand-in of the
 * handshake's cookie session for the real token, and passes every other byte as it came (RFC 6455
 * §5.2 framing). A stand-in it reads and cannot swap (another session's, expired, forged, made
 * under a key no longer configured, its session ended) is not sent on: the relay closes the
 * socket with 1008 (policy violation), the reason naming the fault.
 *
 * A token message is read as Phoenix reads it, in both of its serializers: 2.0.0's array
 * `[join_ref, ref, topic, event, payload, ...]` (elements past the fifth ignored) and 1.0.0's object
 * `{topic, event, payload, ref, join_ref}`, which realtime-js still speaks. What leaves is the
 * message as it was read, serialized again: a repeated key (which Realtime's JSON decoder may take
 * the other one of) or an escaped spelling of one then cannot make Realtime read a token other than
 * the one judged here. A frame the parser does not read (fragmented, over MAX_READ, more structure
 * than MAX_STRUCTURE, not JSON) passes as it came: a stand-in in it reaches Realtime unswapped,
 * which refuses it, as it refuses any token it did not sign.
 */

/** Largest client frame read whole for a token: a join or `access_token` message is a few KiB. */
const MAX_READ = 64 * 1024
const EMPTY = Buffer.alloc(0)
/**
 * Most brackets, colons and commas a frame read for a token may hold (counted in its strings too):
 * a join has a few dozen. JSON.parse's cost follows the structure, not the bytes (64 KiB of nested
 * brackets took 7.7 ms, of one object's keys 2.3 ms, of one string 0.06 ms), and any client with a
 * cookie could send such frames with `access_token` in them.
 */
export const MAX_STRUCTURE = 1024
const EVENTS = new Set(['phx_join', 'access_token'])

/**
 * The real token for a stand-in, undefined to leave the message as it came (it holds none), or a
 * refusal: a stand-in that cannot be swapped is not sent on.
 */
export type TokenSwap = (token: string) => Promise<string | undefined | { refused: string }>

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

/** `access_token`'s bytes: a frame whose payload does not hold them carries no token to swap. */
const NEEDLE = Buffer.from('access_token')
/** The needle's `_`, the byte searched for first (rarer in JSON than its letters). */
const PIVOT = NEEDLE.indexOf(0x5f)
const BACKSLASH = 0x5c
const U = 0x75

/**
 * Whether the masked payload of `length` bytes at `at` (its mask the 4 bytes before it) holds
 * `access_token`, or a `\u` escape (which could spell it: both JSON decoders read
 * `"\u0061ccess_token"` as the key), read in place: most frames (broadcasts, presence, heartbeats)
 * hold neither, and are then neither copied, unmasked nor decoded. The bytes that unmask to `_`
 * or `\` are found 16 at a time (src/sessions/masked-search.ts); only those are checked for the
 * whole needle or the escape.
 */
export function holdsNeedle(data: Uint8Array, at: number, length: number): boolean {
  forgetCopy()
  return holds(data, at, length)
}

/** holdsNeedle on the copy made for the chunk being read (forgotten before each chunk). */
function holds(data: Uint8Array, at: number, length: number): boolean {
  for (let k = nextCandidate(data, at, length, 0); k < length; k = nextCandidate(data, at, length, k + 1))
    if (hitAt(data, at, length, k)) return true
  return false
}

/** Whether the payload's byte `k` is the `_` of the needle or the `\` of a `\u` escape. */
function hitAt(data: Uint8Array, at: number, length: number, k: number): boolean {
  const byte = data[at + k]! ^ data[at - 4 + (k & 3)]!
  if (byte === BACKSLASH) return k + 1 < length && (data[at + k + 1]! ^ data[at - 4 + ((k + 1) & 3)]!) === U
  return byte === 0x5f && needleAt(data, at, length, k - PIVOT)
}

/** Whether the needle starts at `from` in the masked payload of `length` bytes at `at`. */
function needleAt(data: Uint8Array, at: number, length: number, from: number): boolean {
  if (from < 0 || from + NEEDLE.length > length) return false
  for (let k = 0; k < NEEDLE.length; k++) {
    const j = from + k
    if ((data[at + j]! ^ data[at - 4 + (j & 3)]!) !== NEEDLE[k]) return false
  }
  return true
}

/** A Phoenix token message read from a frame: the parsed message and its payload object. */
interface TokenMessage {
  message: unknown
  body: { access_token: string }
}

/** JSON's structural bytes that cost its parser: `[`, `{`, `:` and `,`. */
function structure(payload: Uint8Array): number {
  let n = 0
  for (let i = 0; i < payload.length; i++) {
    const c = payload[i]
    if (c === 0x5b || c === 0x7b || c === 0x3a || c === 0x2c) n++
  }
  return n
}

/**
 * A parsed frame read as Phoenix reads a `phx_join` or `access_token` message carrying a token:
 * serializer 2.0.0's array (its first five elements) or 1.0.0's object.
 */
export function readTokenMessage(message: unknown): TokenMessage | undefined {
  let event: unknown
  let body: unknown
  if (Array.isArray(message)) {
    if (message.length < 5) return undefined
    event = message[3]
    body = message[4]
  } else if (typeof message === 'object' && message !== null) {
    event = (message as { event?: unknown }).event
    body = (message as { payload?: unknown }).payload
  } else return undefined
  if (typeof event !== 'string' || !EVENTS.has(event)) return undefined
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined
  if (typeof (body as { access_token?: unknown }).access_token !== 'string') return undefined
  return { message, body: body as { access_token: string } }
}

/** The masked payload at `at` read as a Phoenix `phx_join` or `access_token` message with a token, if it is one. */
function tokenMessage(data: Buffer, at: number, length: number): TokenMessage | undefined {
  if (!holds(data, at, length)) return undefined
  const payload = Buffer.from(data.subarray(at, at + length))
  for (let i = 0; i < length; i++) payload[i]! ^= data[at - 4 + (i & 3)]!
  if (structure(payload) > MAX_STRUCTURE) return undefined
  let message: unknown
  try {
    message = JSON.parse(payload.toString('utf8'))
  } catch {
    return undefined
  }
  return readTokenMessage(message)
}

/**
 * The client's frames, with stand-ins in Phoenix token messages swapped; everything else untouched,
 * handed to `send` as it is read. A stand-in the swap refuses is not sent on, nor is anything after
 * it: `refused` is called (with the reason), no more bytes are sent, and the relay closes the socket.
 *
 * Synchronous but for a frame that holds a token: the bytes of a chunk up to such a frame leave as
 * one piece (one write to Realtime, not one per frame), and only that frame waits for the swap.
 */
export class PhoenixFrames {
  readonly #swap: TokenSwap
  readonly #send: (bytes: Buffer) => void
  readonly #refuse: (fault: string) => void
  /**
   * The start of a frame (its head, or a whole readable frame) not all here yet. Once its head is
   * whole, a buffer of the `#need` bytes the frame takes, filled as its chunks come: each byte is
   * copied once, and what a socket holds is that buffer whatever number of segments a slow or
   * hostile client cuts the frame into (kept as the chunks they came in, each a Buffer of its own,
   * 1-byte segments held some 80 bytes of memory per byte sent). Before the head is whole, its few
   * bytes (under 14).
   */
  #held: Buffer = EMPTY
  #heldLength = 0
  /** The bytes the held frame needs to be read; 0 while its head is not whole. */
  #need = 0
  /** Bytes of the current frame still to pass as they are. */
  #passing = 0
  #refused = false
  /** The swap in flight, and the chunks read meanwhile. */
  #waiting: Promise<void> | undefined
  #queue: Buffer[] = []

  constructor(swap: TokenSwap, send: (bytes: Buffer) => void, refused: (fault: string) => void) {
    this.#swap = swap
    this.#send = send
    this.#refuse = refused
  }

  /**
   * Reads a chunk: undefined once all of it is read, or, when a frame's token is being swapped, a
   * promise settled once this chunk and every one read after it meanwhile (queued behind the swap,
   * in order) are read. The relay pauses the client until then.
   */
  read(chunk: Buffer): Promise<void> | undefined {
    if (this.#waiting !== undefined) {
      this.#queue.push(chunk)
      return this.#waiting
    }
    const waiting = this.#readChunk(chunk)
    if (waiting === undefined) return undefined
    this.#waiting = this.#drain(waiting)
    return this.#waiting
  }

  /** True while a frame's token is being swapped. */
  get swapping(): boolean {
    return this.#waiting !== undefined
  }

  async #drain(waiting: Promise<void>): Promise<void> {
    try {
      await waiting
      while (this.#queue.length > 0) await this.#readChunk(this.#queue.shift()!)
    } finally {
      this.#waiting = undefined
      this.#queue = []
    }
  }

  #readChunk(chunk: Buffer): Promise<void> | undefined {
    if (this.#refused) return undefined
    let data = chunk
    const held = this.#heldLength
    if (held > 0) {
      if (this.#need === 0) {
        // The head's few bytes, then the chunk: read again from the frame's start.
        data = Buffer.concat([this.#held.subarray(0, held), chunk], held + chunk.length)
      } else {
        const take = Math.min(chunk.length, this.#need - held)
        chunk.copy(this.#held, held, 0, take)
        this.#heldLength = held + take
        if (this.#heldLength < this.#need) return undefined
        // The frame is whole: it is read with what of the chunk follows it.
        data = take === chunk.length ? this.#held : Buffer.concat([this.#held, chunk.subarray(take)])
      }
      this.#held = EMPTY
      this.#heldLength = 0
    }
    return this.#read(data, 0, 0)
  }

  /** Keeps `data` from `at` on, the start of a frame, until the `need` bytes it needs are here. */
  #hold(data: Buffer, at: number, need: number): void {
    const have = data.length - at
    // A frame's bytes in one buffer of its size (a head not yet whole: its bytes alone).
    // Outside Node.js's shared pool: a slice of it would keep its whole slab (64 KiB) alive while held.
    this.#held = Buffer.allocUnsafeSlow(need === 0 ? have : need)
    data.copy(this.#held, 0, at)
    this.#heldLength = have
    this.#need = need
  }

  /**
   * Reads `data` from `at`, the bytes from `run` on not yet sent: they leave in one piece at the
   * chunk's end or before a frame whose token is swapped, which is waited for before reading on.
   */
  #read(data: Buffer, run: number, at: number): Promise<void> | undefined {
    const end = data.length
    forgetCopy()
    // What the frame the chunk ends inside needs: 0 while its head is not whole.
    let need = 0
    while (at < end) {
      need = 0
      if (this.#passing > 0) {
        const n = Math.min(this.#passing, end - at)
        this.#passing -= n
        at += n
        continue
      }
      // The whole frames that hold nothing to read, skipped 16 bytes at a time in WebAssembly.
      at = skipFrames(data, at, end)
      if (at === end) break
      // The frame's head (RFC 6455 §5.2): 2 bytes, the extended length, the mask.
      const size = headSize(data, at, end)
      if (size === 0) break
      const length = payloadLength(data, at)
      // Only a whole, unfragmented, uncompressed, masked text frame is read for a token.
      const readable = data[at] === 0x81 && (data[at + 1]! & 0x80) !== 0 && length <= MAX_READ
      if (!readable) {
        at += size
        this.#passing = length
        continue
      }
      need = size + length
      if (end - at < need) break
      const found = tokenMessage(data, at + size, length)
      if (found === undefined) {
        at += size + length
        continue
      }
      if (at > run) this.#send(data.subarray(run, at))
      return this.#swapIn(found, data, at + size + length)
    }
    // A chunk of whole frames, the usual case, leaves as the buffer it came in: no view made of it.
    if (run === 0 && at === end) this.#send(data)
    else if (at > run) this.#send(data.subarray(run, at))
    if (at < end) this.#hold(data, at, need)
    return undefined
  }

  /** The frame ending at `next` holds `found`: it leaves with its token swapped (or is refused), then the rest of `data`. */
  async #swapIn(found: TokenMessage, data: Buffer, next: number): Promise<void> {
    const real = await this.#swap(found.body.access_token)
    if (typeof real === 'object') {
      this.#refused = true
      this.#refuse(real.refused)
      return
    }
    // Not a stand-in (the anonymous key, a token of the client's own) leaves as it was read too.
    if (real !== undefined) found.body.access_token = real
    this.#send(maskedTextFrame(JSON.stringify(found.message)))
    return this.#read(data, next, next)
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
): TokenSwap | undefined {
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
  return async (token) => {
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
  }
}
