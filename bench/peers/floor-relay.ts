/**
 * The relay of the bench's floors (node-floor.ts, fastify-floor.ts), and the backend path they
 * forward to. The relay is an undici dispatch handler that
 * holds the answer whole and writes it with its head in one piece, as authgate's relay does for
 * small bodies, to a `ServerResponse`. Nothing else: no header hygiene, metrics or logs.
 */
import type { ServerResponse } from 'node:http'
import type { Dispatcher } from 'undici'

/**
 * The backend path of a request target: the `/auth` prefix dropped as authgate's Auth routes do,
 * or `/rest/v1` as its REST service does (case e); the fake backend answers both.
 */
export function backendPath(target: string): string {
  return target.replace(/^\/(auth|rest\/v1|storage\/v1)/, '')
}

/** Storage's objects (10 MB in the bench) are streamed both ways, as authgate's services relay them. */
export function streamed(target: string): boolean {
  return target.startsWith('/storage/v1/')
}

// Content-Length too: the relay sets the length of what it holds.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length'])

/** The answer held whole and written with its head in one piece, as authgate's relay does for small bodies. */
export class Relay implements Dispatcher.DispatchHandler {
  #status = 0
  #headers: string[] = []
  #chunks: Buffer[] = []
  readonly res: ServerResponse
  constructor(res: ServerResponse) {
    this.res = res
  }
  onRequestStart(): void {}
  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#status = statusCode
    const raw = controller.rawHeaders as Buffer[]
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toString('latin1')
      if (!HOP_BY_HOP.has(name.toLowerCase())) this.#headers.push(name, raw[i + 1]!.toString('latin1'))
    }
  }
  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#chunks.push(chunk)
  }
  onResponseEnd(): void {
    const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks)
    this.#headers.push('content-length', String(body.length))
    this.res.writeHead(this.#status, this.#headers).end(body)
  }
  onResponseError(): void {
    if (!this.res.headersSent) this.res.writeHead(502).end()
    else this.res.destroy()
  }
}

/** The answer streamed as it arrives, with backpressure: the relay of a runtime floor for large bodies. */
export class StreamingRelay implements Dispatcher.DispatchHandler {
  readonly res: ServerResponse
  #controller: Dispatcher.DispatchController | undefined
  constructor(res: ServerResponse) {
    this.res = res
    res.on('drain', () => this.#controller?.resume())
  }
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
  }
  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    const headers: string[] = []
    const raw = controller.rawHeaders as Buffer[]
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toString('latin1')
      const lower = name.toLowerCase()
      if (lower !== 'connection' && lower !== 'keep-alive' && lower !== 'transfer-encoding')
        headers.push(name, raw[i + 1]!.toString('latin1'))
    }
    this.res.writeHead(statusCode, headers)
  }
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) controller.pause()
  }
  onResponseEnd(): void {
    this.res.end()
  }
  onResponseError(): void {
    if (!this.res.headersSent) this.res.writeHead(502).end()
    else this.res.destroy()
  }
}
