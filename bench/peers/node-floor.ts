/**
 * The floor of a Node.js gateway, for the bench: `node:http` and one undici Pool driven through its
 * dispatch API (what authgate's forwarder uses: no Readable, no promise per request), with none of
 * what authgate does per request (no routing table, validation, header hygiene, hooks, metrics or
 * logs). Not a peer anyone would deploy: it shows how much of authgate's cost is the runtime itself.
 *
 *   node bench/peers/node-floor.ts [--authgate-429] <port> <limited port> <backend port>
 *                              [<storage port> <socket port> <socket upstream port>]
 *
 * On <port> every request is forwarded (the `/auth` or `/rest/v1` prefix dropped) and the answer relayed with its
 * status and headers (Storage's objects, to <storage port>, streamed both ways); on <limited port> every request gets a
 * prebuilt 429, as a client over its limit. On <socket port>, when given, every connection is piped
 * byte for byte to <socket upstream port>: the floor of a WebSocket relay (Realtime's socket), TCP
 * and nothing else, the handshake included.
 *
 * With `--authgate-429` (the bench's `answer` peer) the limited port answers authgate's own 429
 * instead, byte for byte as authgate's early refusal writes it (its eight headers through
 * `writeHead` as a flat list, the body a string after them), with nothing of authgate's work per
 * refusal (no routing, decision, request id, metrics or log): what the answer itself costs Node.js,
 * between the runtime floor's three headers and authgate.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect, createServer as createTcpServer } from 'node:net'
import { Pool, type Dispatcher } from 'undici'
import { backendPath, Relay, streamed, StreamingRelay } from './floor-relay.ts'

const argv = process.argv.slice(2)
const authgateAnswer = argv[0] === '--authgate-429'
const [port, limitedPort, backendPort, storagePort, socketPort, socketUpstreamPort] = argv
  .slice(authgateAnswer ? 1 : 0)
  .map(Number)
const pool = new Pool(`http://127.0.0.1:${backendPort}`, { connections: 64, pipelining: 1 })
const storagePool = new Pool(`http://127.0.0.1:${storagePort ?? backendPort}`, { connections: 64, pipelining: 1 })
// Fastify's default keep-alive timeout (the framework floor's), not node:http's 5 s: a connection idle
// for a few seconds (between bench/instructions.ts's windows, on a loaded machine) stays open. Under
// wrk's load no connection idles.
const KEEP_ALIVE_MS = 72_000
createServer((req: IncomingMessage, res: ServerResponse) => {
  const url = req.url ?? '/'
  if (streamed(url)) {
    const length = req.headers['content-length']
    storagePool.dispatch(
      {
        method: req.method as Dispatcher.HttpMethod,
        path: backendPath(url),
        headers: length !== undefined ? ['content-length', length] : [],
        body: length !== undefined && length !== '0' ? req : null,
      },
      new StreamingRelay(res),
    )
    return
  }
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const contentType = req.headers['content-type']
    pool.dispatch(
      {
        method: req.method as Dispatcher.HttpMethod,
        path: backendPath(req.url ?? '/'),
        headers: contentType ? ['content-type', contentType] : [],
        body: chunks.length === 0 ? null : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
      },
      new Relay(res),
    )
  })
}).listen(port, '127.0.0.1').keepAliveTimeout = KEEP_ALIVE_MS

const DENIED = Buffer.from('{"code":429,"error_code":"over_request_rate_limit","msg":"Request rate limit reached"}')
// authgate's answer to a client over the default limit (30/5m), its request id one of the right
// length: the same header list and body string its early refusal hands to Node.js.
const ANSWER_HEADERS = [
  'x-request-id',
  '00000000-0000-4000-8000-000000000000',
  'vary',
  'Origin',
  'content-type',
  'application/json',
  'x-sb-error-code',
  'over_request_rate_limit',
  'ratelimit-policy',
  '"default";q=30;w=300',
  'ratelimit',
  '"default";r=0;t=10',
  'retry-after',
  '10',
  'content-length',
  String(DENIED.length),
]
const ANSWER_BODY = DENIED.toString('latin1')
createServer((req, res) => {
  // Drains the body so the connection stays usable, as any server must.
  req.resume()
  if (authgateAnswer) res.writeHead(429, ANSWER_HEADERS).end(ANSWER_BODY, 'latin1')
  else
    res
      .writeHead(429, { 'content-type': 'application/json', 'content-length': DENIED.length, 'retry-after': '10' })
      .end(DENIED)
}).listen(limitedPort, '127.0.0.1').keepAliveTimeout = KEEP_ALIVE_MS

if (socketPort !== undefined && socketUpstreamPort !== undefined && !Number.isNaN(socketPort)) {
  createTcpServer((client) => {
    const upstream = connect(socketUpstreamPort, '127.0.0.1')
    client.setNoDelay(true)
    upstream.setNoDelay(true)
    client.pipe(upstream).pipe(client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  }).listen(socketPort, '127.0.0.1')
}
