import type { FastifyReply } from 'fastify'
import type { Dispatcher } from 'undici'
import { inboundResponseHeaders } from '../proxy/headers.ts'
import { mergeOwnHeaders } from '../proxy/relay.ts'
import { relayed } from './scavenge.ts'
import { makeInert } from './user-content.ts'

export interface StreamRelayOptions {
  reply: FastifyReply
  /** authgate answers CORS itself: the upstream's `Access-Control-*` headers are dropped. */
  ownCors: boolean
  /** The answer is user content on authgate's origin: made inert (src/services/user-content.ts). */
  inert: boolean
  /** The upstream answered (its status) or failed after answering: timing and metrics. */
  onStatus(status: number): void
  /** The exchange failed; `started` when the head was already written to the client. */
  onFailure(err: Error & { code?: string }, started: boolean): void
  /** Always called once, when the relay is over. */
  onDone(): void
}

/**
 * A service's answer relayed as it arrives: the head written as soon as it comes, every chunk
 * written at once with backpressure (the upstream paused while the client's socket is full), and
 * nothing held. Unlike the auth routes' relay (src/proxy/relay.ts), which holds small answers to
 * write them in one piece, a service's answer may be server-sent events, where a held chunk is a
 * late event, or a download of any size. A client that goes away cancels the upstream request.
 */
export class StreamRelay implements Dispatcher.DispatchHandler {
  started = false
  readonly #o: StreamRelayOptions
  readonly #res: FastifyReply['raw']
  #controller: Dispatcher.DispatchController | undefined
  #clientGone = false
  /** The first chunk, held until the end of the tick so that a small answer goes out in one write. */
  #held: Buffer | undefined
  #flushed = false
  #flushTimer: NodeJS.Immediate | undefined

  constructor(options: StreamRelayOptions) {
    this.#o = options
    this.#res = options.reply.raw
    this.#res.once('close', this.#onClose)
    this.#res.on('drain', this.#onDrain)
  }

  readonly #onClose = () => {
    if (this.#res.writableFinished) return
    this.#clientGone = true
    this.#controller?.abort(new Error('client closed the connection'))
  }

  readonly #onDrain = () => this.#controller?.resume()

  /**
   * What was held goes out: the head with the first chunk. On the next turn of the event loop, so
   * an answer whose head, body and end arrive in one read (most of PostgREST's) costs one write to
   * the client's socket, not three; a stream's head (server-sent events) still goes at once.
   */
  readonly #flush = () => {
    this.#flushTimer = undefined
    if (this.#flushed) return
    this.#flushed = true
    const held = this.#held
    this.#held = undefined
    if (held === undefined) this.#res.flushHeaders()
    else if (!this.#res.write(held)) this.#controller?.pause()
  }

  #done(): void {
    if (this.#flushTimer !== undefined) clearImmediate(this.#flushTimer)
    this.#res.off('close', this.#onClose)
    this.#res.off('drain', this.#onDrain)
    this.#o.onDone()
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#clientGone) controller.abort(new Error('client closed the connection'))
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#o.onStatus(statusCode)
    const upstreamHeaders = inboundResponseHeaders(controller.rawHeaders as Buffer[])
    const merged = mergeOwnHeaders(upstreamHeaders, this.#o.reply.getHeaders(), this.#o.ownCors)
    const flat = this.#o.inert ? makeInert(merged) : merged
    this.#o.reply.hijack()
    this.started = true
    try {
      this.#res.writeHead(statusCode, flat)
      this.#flushTimer = setImmediate(this.#flush)
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
    if (!this.#flushed) this.#flush()
    if (!this.#res.write(chunk)) controller.pause()
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
    if (!this.#clientGone) this.#o.onFailure(err, this.started)
    this.#done()
  }
}
