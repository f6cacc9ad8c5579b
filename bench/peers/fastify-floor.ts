/**
 * The floor of a Fastify gateway, for the bench: the node floor (node-floor.ts) with Fastify 5 in
 * front, as a plugin like authgate is used, and nothing else. Fastify's request and reply, its
 * router and hook runner, the body read by its content-type parser (kept as bytes, not parsed) and
 * the answer relayed from a hijacked reply through the same undici dispatch and relay as the node
 * floor. No validation, header hygiene, rate limiting, metrics or logs. It separates what Fastify
 * itself costs per request from what authgate adds on top.
 *
 *   node bench/peers/fastify-floor.ts <port> <limited port> <backend port>
 *
 * On <port> every request is forwarded (an `/auth` or `/rest/v1` prefix dropped); on <limited port> every request
 * gets a prebuilt 429 from a route, as a client over its limit.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { Pool, type Dispatcher } from 'undici'
import { backendPath, Relay } from './floor-relay.ts'

const [port, limitedPort, backendPort] = process.argv.slice(2).map(Number)
const pool = new Pool(`http://127.0.0.1:${backendPort}`, { connections: 64, pipelining: 1 })

function forward(request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack()
  const contentType = request.headers['content-type']
  pool.dispatch(
    {
      method: request.method as Dispatcher.HttpMethod,
      path: backendPath(request.url),
      headers: contentType ? ['content-type', contentType] : [],
      body: (request.body as Buffer | undefined) ?? null,
    },
    new Relay(reply.raw),
  )
}

const app = Fastify({ logger: false })
app.removeAllContentTypeParsers()
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
app.all('/*', forward)
await app.listen({ port, host: '127.0.0.1' })

const DENIED = Buffer.from('{"code":429,"error_code":"over_request_rate_limit","msg":"Request rate limit reached"}')
const limited = Fastify({ logger: false })
limited.removeAllContentTypeParsers()
// The body is read and dropped, so the connection stays usable, as any server must.
limited.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => done(null))
limited.all('/*', (_request, reply) => {
  reply.code(429).header('content-type', 'application/json').header('retry-after', '10').send(DENIED)
})
await limited.listen({ port: limitedPort, host: '127.0.0.1' })
