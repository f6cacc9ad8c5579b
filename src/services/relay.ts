// Node.js's own, not the global: the global `performance` is a lazy getter that runs a check on
// every read (docs/decisions.md, D200, D208).
import { performance } from 'node:perf_hooks'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Dispatcher } from 'undici'
import { inboundResponseHeaders } from '../proxy/headers.ts'
import { mergeOwnHeaders, ownHeaders } from '../proxy/relay.ts'
import { relayed } from './scavenge.ts'
import { makeInert } from './user-content.ts'

/**
 * What a relay tells the service proxy that started it. Methods of one long-lived object per
 * mounted service rather than closures per request.
 */
export interface StreamRelayOwner {
  /** The upstream answered (its status): timing and metrics. */
  answered(relay: StreamRelay, status: number): void
  /** The exchange failed (`relay.started` when the head was already written to the client); the client is not gone. */
  failed(relay: StreamRelay, err: Error & { code?: string }): void
}

/** What every relay of one mounted service shares: one object per service, not per request. */
export interface StreamRelayRoute {
  /** authgate answers CORS itself: the upstream's `Access-Control-*` headers are dropped. */
  ownCors: boolean
  /** The answer is user content on authgate's origin: made inert (src/services/user-content.ts). */
  inert: boolean
  owner: StreamRelayOwner
}

/**
 * A service's answer relayed as it arrives: the head written as soon as it comes, every chunk
 * written at once with backpressure (the upstream paused while the client's socket is full), and
 * nothing held. Unlike the auth routes' relay (src/proxy/relay.ts), which holds small answers to
 * write them in one piece, a service's answer may be server-sent events, where a held chunk is a
 * late event, or a download of any size. A client that goes away cancels the upstream request.
 */
export class StreamRelay implements Dispatcher.DispatchHandler {
  readonly startedAt = performance.now()
  /** True once the response head was written to the client. */
  started = false
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  readonly #route: StreamRelayRoute
  /** Called once, when the relay is over (undefined: nobody waits for it). */
  readonly #onDone: (() => void) | undefined
  readonly #res: FastifyReply['raw']
  #controller: Dispatcher.DispatchController | undefined
  #clientGone = false
  /** The first chunk, held until the end of the tick so that a small answer goes out in one write. */
  #held: Buffer | undefined
  /** The head (and what was held) went out, or the relay is over: nothing is left to flush. */
  #flushed = false

  // Made and listened for only once a write is refused: most answers fit the socket's buffer.
  #onDrain: (() => void) | undefined

  constructor(request: FastifyRequest, reply: FastifyReply, route: StreamRelayRoute, onDone: (() => void) | undefined) {
    this.request = request
    this.reply = reply
    this.#route = route
    this.#onDone = onDone
    this.#res = reply.raw
    // `on`, not `once`: the listener is taken off when the relay is over, and `once` would wrap it
    // in a new function per request.
    this.#res.on('close', this.#onClose)
  }

  readonly #onClose = () => {
    if (this.#res.writableFinished) return
    this.#clientGone = true
    this.#controller?.abort(new Error('client closed the connection'))
  }

  /** Writes a chunk; when the client's socket is full, the upstream waits for its 'drain'. */
  #write(chunk: Buffer, controller: Dispatcher.DispatchController | undefined): void {
    if (this.#res.write(chunk)) return
    if (this.#onDrain === undefined) {
      this.#onDrain = () => this.#controller?.resume()
      this.#res.on('drain', this.#onDrain)
    }
    controller?.pause()
  }

  /**
   * What was held goes out: the head with the first chunk. At the end of this turn of the event
   * loop (`holdUntilTurnEnds`), so an answer whose head, body and end arrive in one read (most of
   * PostgREST's) costs one write to the client's socket, not three; a stream's head (server-sent
   * events) still goes at once.
   */
  flushHeld(): void {
    if (this.#flushed) return
    this.#flushed = true
    const held = this.#held
    this.#held = undefined
    if (held === undefined) this.#res.flushHeaders()
    else this.#write(held, this.#controller)
  }

  #done(): void {
    this.#flushed = true
    this.#res.off('close', this.#onClose)
    if (this.#onDrain !== undefined) this.#res.off('drain', this.#onDrain)
    this.#onDone?.()
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#clientGone) controller.abort(new Error('client closed the connection'))
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    const route = this.#route
    route.owner.answered(this, statusCode)
    const upstreamHeaders = inboundResponseHeaders(controller.rawHeaders as Buffer[])
    const merged = mergeOwnHeaders(upstreamHeaders, ownHeaders(this.reply), route.ownCors)
    const flat = route.inert ? makeInert(merged) : merged
    this.reply.hijack()
    this.started = true
    try {
      this.#res.writeHead(statusCode, flat)
      holdUntilTurnEnds(this)
    } catch (err) {
      controller.abort(err as Error)
      this.#res.destroy()
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    relayed(chunk.length)
    if (!this.#flushed && this.#held === undefined) {
      this.#held = chunk
      return
    }
    if (!this.#flushed) this.flushHeld()
    this.#write(chunk, controller)
  }

  onResponseEnd(): void {
    this.#flushed = true
    const held = this.#held
    this.#held = undefined
    if (held === undefined) this.#res.end()
    else this.#res.end(held)
    this.#done()
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error & { code?: string }): void {
    if (!this.#clientGone) this.#route.owner.failed(this, err)
    this.#done()
  }
}

// The relays whose head is held until the end of this turn of the event loop, and the one Immediate
// that flushes them all, where each answer made an Immediate and a bound callback of its own
// (docs/decisions.md, D191). In the order their heads came, as separate Immediates ran them; a
// relay over by then (its end came in the same read) has nothing to flush.
let holding: StreamRelay[] = []
let flushing: NodeJS.Immediate | undefined

function holdUntilTurnEnds(relay: StreamRelay): void {
  holding.push(relay)
  flushing ??= setImmediate(flushHolding)
}

function flushHolding(): void {
  const relays = holding
  holding = []
  flushing = undefined
  for (const relay of relays) relay.flushHeld()
}
