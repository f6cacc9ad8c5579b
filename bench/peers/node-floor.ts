/**
 * The floor of a Node.js gateway, for the bench: `node:http` and one undici Pool driven through its
 * dispatch API (what authgate's forwarder uses: no Readable, no promise per request), with none of
 * what authgate does per request (no routing table, validation, header hygiene, hooks, metrics or
 * logs). Not a peer anyone would deploy: it shows how much of authgate's cost is the runtime itself.
 *
 *   node bench/peers/node-floor.ts <port> <limited port> <backend port>
 *
 * On <port> every request is forwarded (the `/auth` prefix dropped) and the answer relayed with its
 * status and headers; on <limited port> every request gets a prebuilt 429, as a client over its limit.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { Pool, type Dispatcher } from 'undici'

const [port, limitedPort, backendPort] = process.argv.slice(2).map(Number)
const pool = new Pool(`http://127.0.0.1:${backendPort}`, { connections: 64, pipelining: 1 })
// Content-Length too: the relay sets the length of what it holds.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length'])

/** The answer held whole and written with its head in one piece, as authgate's relay does for small bodies. */
class Relay implements Dispatcher.DispatchHandler {
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

createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const contentType = req.headers['content-type']
    pool.dispatch(
      {
        method: req.method as Dispatcher.HttpMethod,
        path: (req.url ?? '/').replace(/^\/auth/, ''),
        headers: contentType ? ['content-type', contentType] : [],
        body: chunks.length === 0 ? null : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
      },
      new Relay(res),
    )
  })
}).listen(port, '127.0.0.1')

const DENIED = Buffer.from('{"code":429,"error_code":"over_request_rate_limit","msg":"Request rate limit reached"}')
createServer((req, res) => {
  // Drains the body so the connection stays usable, as any server must.
  req.resume()
  res
    .writeHead(429, { 'content-type': 'application/json', 'content-length': DENIED.length, 'retry-after': '10' })
    .end(DENIED)
}).listen(limitedPort, '127.0.0.1')
