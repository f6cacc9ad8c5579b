import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Dispatcher } from 'undici'
import { HELD_ANSWER_LIMIT, readHeldAnswer, type HeldAnswer, type UnreadableAnswerError } from '../core/held-answer.ts'
import { AuthgateError } from '../errors.ts'
import type { BackendErrorKind } from '../core/backend-timing.ts'
import { reportAnswer } from '../core/answer-watch.ts'
import { inboundResponseHeaders } from './headers.ts'
import type { ResponseCache } from './response-cache.ts'

/** Bodies up to this size are written in one piece with the response head. */
const BUFFER_LIMIT = 64 * 1024

/**
 * Changes a whole answer before it is relayed (cookie sessions take the tokens out of session
 * answers). It sees the answer decoded (src/core/held-answer.ts). Own headers it sets on the reply
 * are merged as usual. A rejection is answered by `onFailure`, as a backend failure before the
 * answer started.
 */
export type AnswerRewrite = (answer: HeldAnswer) => Promise<HeldAnswer>

/**
 * A route's own change to its answer (docs/decisions.md, D28), run before any other rewrite. It
 * may read the request (the client's credentials, D81) and wait (the issuer, D81).
 */
export type AnswerMend = (answer: HeldAnswer, request: FastifyRequest) => HeldAnswer | Promise<HeldAnswer>

/**
 * What a relay tells the forwarder that started it. Methods of one long-lived object rather than
 * closures per request: a forwarded request allocates the relay and its options, nothing more.
 */
export interface RelayOwner {
  /** The exchange ended with a status (or an error kind): timing and metrics. */
  exchanged(relay: Relay, status: number | undefined, error?: BackendErrorKind): void
  /** The backend request failed (before or after the answer started); the client is not gone. */
  failed(relay: Relay, err: Error & { code?: string }): void
}

export interface RelayOptions {
  request: FastifyRequest
  reply: FastifyReply
  /** The backend path without its query (for the owner's log lines). */
  backendPath: string
  /** authgate answers CORS itself: the backend's `Access-Control-*` headers are dropped. */
  ownCors: boolean
  /** Where a complete answer is stored, for a cacheable route. */
  cache: { cache: ResponseCache; key: string } | undefined
  /**
   * The answer is held whole and rewritten before anything is written; with `cache`, the rewritten
   * answer is what is stored (a rewrite that is the same for every client).
   */
  rewrite?: AnswerRewrite | undefined
  owner: RelayOwner
  /** Called once, when the relay is over (undefined: nobody waits for it). */
  onDone: (() => void) | undefined
}

/**
 * One backend answer relayed to the client, as undici's dispatch handler: the backend's status and
 * headers written directly (Fastify would re-case, merge and reorder them), small bodies held and
 * written with the head in one piece, larger ones streamed with backpressure. A client that goes
 * away cancels the backend request. No Readable and no AbortController per request (the shape of
 * undici's own proxy agent).
 */
export class Relay implements Dispatcher.DispatchHandler {
  readonly startedAt = performance.now()
  /** True once the response head was written to the client. */
  started = false
  readonly options: RelayOptions
  readonly #res: FastifyReply['raw']
  #controller: Dispatcher.DispatchController | undefined
  // What is held of an answer not streamed (yet): its first chunk, and a list only when more come
  // (most answers are one chunk, and a list reserved room for seventeen).
  #first: Buffer | undefined
  #more: Buffer[] | undefined
  #streaming = false
  #heldBytes = 0
  #clientGone = false
  // Set when a write is refused; 'drain' may come before pause() is reached, so it clears the flag.
  #waitingForDrain = false
  // Made and listened for only once a body streams: most answers are held and written in one piece.
  #onDrain: (() => void) | undefined
  // What the cache would store: the status and headers relayed (before our own are merged).
  #relayedStatus = 0
  #relayedHeaders: string[] | undefined

  constructor(options: RelayOptions) {
    this.options = options
    this.#res = options.reply.raw
    // `on`, not `once`: the listener is taken off when the relay is over, and `once` would wrap it
    // in a new function per request.
    this.#res.on('close', this.#onClose)
  }

  readonly #onClose = () => {
    if (this.#res.writableFinished) return
    this.#clientGone = true
    this.#controller?.abort(new Error('client closed the connection'))
  }

  #write(b: Buffer): void {
    if (this.#onDrain === undefined) {
      this.#onDrain = () => {
        this.#waitingForDrain = false
        this.#controller?.resume()
      }
      this.#res.on('drain', this.#onDrain)
    }
    if (!this.#res.write(b)) this.#waitingForDrain = true
  }

  /** The held answer's bytes, in one piece. */
  #heldBody(): Buffer {
    if (this.#first === undefined) return Buffer.alloc(0)
    if (this.#more === undefined) return this.#first
    return Buffer.concat([this.#first, ...this.#more], this.#heldBytes)
  }

  #done(): void {
    this.#res.off('close', this.#onClose)
    if (this.#onDrain !== undefined) this.#res.off('drain', this.#onDrain)
    this.options.onDone?.()
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#clientGone) controller.abort(new Error('client closed the connection'))
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    this.options.owner.exchanged(this, statusCode)
    const relayed = inboundResponseHeaders(controller.rawHeaders as Buffer[])
    // A per-account sign-in limit waiting to learn whether this attempt was refused.
    reportAnswer(this.options.request.raw, statusCode, relayed)
    if (this.options.rewrite !== undefined) {
      this.#relayedStatus = statusCode
      this.#relayedHeaders = relayed
      return
    }
    if (this.options.cache !== undefined) {
      this.#relayedStatus = statusCode
      this.#relayedHeaders = relayed.slice()
    }
    const flat = mergeOwnHeaders(relayed, ownHeaders(this.options.reply), this.options.ownCors)
    this.#writeHead(statusCode, flat, controller)
  }

  #writeHead(statusCode: number, flat: string[], controller?: Dispatcher.DispatchController): boolean {
    this.options.reply.hijack()
    this.started = true
    try {
      this.#res.writeHead(statusCode, flat)
      return true
    } catch (err) {
      this.options.owner.exchanged(this, statusCode, 'bad_header')
      this.options.request.log.error({ err }, 'backend sent a header Node.js refuses to relay')
      controller?.abort(err as Error)
      this.#res.destroy()
      return false
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // Small answers (most of Supabase Auth's) are held and written with the head in one syscall;
    // past BUFFER_LIMIT the body streams with backpressure.
    if (!this.#streaming) {
      if (this.#first === undefined) this.#first = chunk
      else (this.#more ??= []).push(chunk)
      this.#heldBytes += chunk.length
      if (this.options.rewrite !== undefined) {
        if (this.#heldBytes > HELD_ANSWER_LIMIT) controller.abort(new Error('answer too large to rewrite'))
        return
      }
      if (this.#heldBytes <= BUFFER_LIMIT) return
      this.#streaming = true
      this.#write(this.#first)
      if (this.#more !== undefined) for (const b of this.#more) this.#write(b)
      this.#first = undefined
      this.#more = undefined
    } else this.#write(chunk)
    if (this.#waitingForDrain) controller.pause()
  }

  onResponseEnd(): void {
    if (this.options.rewrite !== undefined) {
      this.#endRewritten()
      return
    }
    if (this.#first === undefined) this.#res.end()
    else {
      const body = this.#heldBody()
      this.#res.end(body)
      const cache = this.options.cache
      if (cache !== undefined && this.#relayedHeaders !== undefined)
        cache.cache.store(cache.key, this.#relayedStatus, this.#relayedHeaders, body, this.options.request.headers)
    }
    this.#done()
  }

  #endRewritten(): void {
    let answer: HeldAnswer
    try {
      answer = readHeldAnswer({
        status: this.#relayedStatus,
        headers: this.#relayedHeaders ?? [],
        body: this.#heldBody(),
      })
    } catch (err) {
      // Fails closed: an answer authgate cannot read may carry what it exists to take out (a
      // session's tokens), so it is never relayed as it came.
      // readHeldAnswer throws nothing else.
      const unreadable = err as UnreadableAnswerError
      this.options.request.log.error(
        { status: this.#relayedStatus, encoding: unreadable.encoding, reason: unreadable.message },
        'backend answer could not be read',
      )
      if (!this.#clientGone)
        this.options.owner.failed(this, new AuthgateError('backend_unreadable', undefined, { cause: err }))
      return this.#done()
    }
    this.options.rewrite!(answer).then(
      (out) => {
        if (this.#clientGone) return this.#done()
        // The body may have changed length: the backend's framing headers no longer apply.
        const headers = out.headers.filter((_, i, all) => {
          const name = all[i - (i % 2)]!.toLowerCase()
          return name !== 'content-length' && name !== 'transfer-encoding'
        })
        headers.push('content-length', String(out.body.length))
        const stored = this.options.cache !== undefined ? headers.slice() : undefined
        const flat = mergeOwnHeaders(headers, ownHeaders(this.options.reply), this.options.ownCors)
        if (this.#writeHead(out.status, flat)) this.#res.end(out.body)
        const cache = this.options.cache
        if (cache !== undefined && stored !== undefined)
          cache.cache.store(cache.key, out.status, stored, out.body, this.options.request.headers)
        this.#done()
      },
      (err: Error & { code?: string }) => {
        if (!this.#clientGone) this.options.owner.failed(this, err)
        this.#done()
      },
    )
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error & { code?: string }): void {
    if (!this.#clientGone) this.options.owner.failed(this, err)
    this.#done()
  }
}

// Where Fastify keeps the headers set with `reply.header()`: an own property of each reply, under a
// symbol of its own, found on the first reply (null: not found, and `getHeaders()` is used).
let kReplyHeaders: symbol | null | undefined

/**
 * The headers set on the reply so far, what `reply.getHeaders()` answers, read where they are: that
 * copies the response's own headers and Fastify's into a new object (two objects a request) where
 * the response has none of its own but in rare cases (authgate and its plugins set headers through
 * the reply). Only read, never changed.
 */
export function ownHeaders(reply: FastifyReply): Record<string, unknown> {
  if (kReplyHeaders === undefined)
    kReplyHeaders = Object.getOwnPropertySymbols(reply).find((s) => s.description === 'fastify.reply.headers') ?? null
  if (kReplyHeaders === null || responseHasHeaders(reply.raw)) return reply.getHeaders()
  return (reply as unknown as Record<symbol, Record<string, unknown>>)[kReplyHeaders]!
}

// Where Node.js keeps a response's own headers: an own property of each response, null until one
// is set, found on the first response (null: not found, and `getHeaderNames()` is asked).
let kOutHeaders: symbol | null | undefined

/**
 * Whether the response has a header of its own, what `getHeaderNames().length > 0` answers, read
 * where Node.js keeps them: that makes a list of the names on every answer to find it empty.
 */
function responseHasHeaders(res: FastifyReply['raw']): boolean {
  if (kOutHeaders === undefined)
    kOutHeaders = Object.getOwnPropertySymbols(res).find((s) => s.description === 'kOutHeaders') ?? null
  if (kOutHeaders === null) return res.getHeaderNames().length > 0
  const headers = (res as unknown as Record<symbol, Record<string, unknown> | null | undefined>)[kOutHeaders]
  if (headers === null || headers === undefined) return false
  for (const _ in headers) return true
  return false
}

/**
 * The backend's headers (hop-by-hop aside), then those the gateway's own hooks set (rate-limit
 * headers) unless the backend sent the same name.
 */
export function mergeOwnHeaders(relayed: string[], own: Record<string, unknown>, ownCors: boolean): string[] {
  // Only authgate's CORS answer counts: the backend's (`*` from Supabase Auth) would override the origin list.
  const flat = ownCors
    ? relayed.filter((_, i, all) => !all[i - (i % 2)]!.toLowerCase().startsWith('access-control-'))
    : relayed
  // Own headers are few (the request id, a limit's headers): each is looked for among the relayed
  // names directly, with no set of lower-cased names built per answer.
  const relayedLength = flat.length
  for (const name in own) {
    const value = own[name]
    if (value === undefined || relayedHas(flat, relayedLength, name)) continue
    if (Array.isArray(value)) for (const v of value) flat.push(name, String(v))
    else flat.push(name, String(value))
  }
  return flat
}

/**
 * Whether one of the first `end` entries of a flat header list is a name equal to `wanted`, ignoring
 * ASCII case on both sides: no lower-cased copy of `wanted` is made for the look (the own headers'
 * names are lower case already, as Fastify and Node.js keep them, but the look does not rely on it).
 */
function relayedHas(flat: readonly string[], end: number, wanted: string): boolean {
  for (let i = 0; i < end; i += 2) {
    const name = flat[i]!
    if (name.length !== wanted.length) continue
    let j = 0
    for (; j < name.length; j++) {
      const c = name.charCodeAt(j)
      const w = wanted.charCodeAt(j)
      if ((c >= 0x41 && c <= 0x5a ? c + 0x20 : c) !== (w >= 0x41 && w <= 0x5a ? w + 0x20 : w)) break
    }
    if (j === name.length) return true
  }
  return false
}
