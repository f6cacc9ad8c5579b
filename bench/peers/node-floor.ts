/**
 * The floor of a Node.js gateway, for the bench: `node:http` and one undici Pool, with none of what
 * authgate does per request (no routing table, validation, header hygiene, hooks, metrics or logs).
 * Not a peer anyone would deploy: it shows how much of authgate's cost is the runtime itself.
 *
 *   node bench/peers/node-floor.ts <port> <limited port> <backend port>
 *
 * On <port> every request is forwarded (the `/auth` prefix dropped) and the answer relayed with its
 * status and headers; on <limited port> every request gets a prebuilt 429, as a client over its limit.
 */
import { createServer, type IncomingMessage } from 'node:http'
import { Pool } from 'undici'

const [port, limitedPort, backendPort] = process.argv.slice(2).map(Number)
const pool = new Pool(`http://127.0.0.1:${backendPort}`, { connections: 64, pipelining: 1 })
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding'])

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(chunks.length === 0 ? undefined : Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

createServer(async (req, res) => {
  try {
    const body = await readBody(req)
    const answer = await pool.request({
      method: req.method as 'GET',
      path: (req.url ?? '/').replace(/^\/auth/, ''),
      headers: req.headers['content-type'] ? { 'content-type': req.headers['content-type'] } : {},
      body,
    })
    const bytes = Buffer.from(await answer.body.arrayBuffer())
    const headers: Record<string, string | string[]> = {}
    for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v
    headers['content-length'] = String(bytes.length)
    res.writeHead(answer.statusCode, headers).end(bytes)
  } catch {
    res.writeHead(502).end()
  }
}).listen(port, '127.0.0.1')

const DENIED = Buffer.from('{"code":429,"error_code":"over_request_rate_limit","msg":"Request rate limit reached"}')
createServer((req, res) => {
  // Drains the body so the connection stays usable, as any server must.
  req.resume()
  res
    .writeHead(429, { 'content-type': 'application/json', 'content-length': DENIED.length, 'retry-after': '10' })
    .end(DENIED)
}).listen(limitedPort, '127.0.0.1')
