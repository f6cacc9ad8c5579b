import type { FastifyInstance } from 'fastify'
import { sendError } from '../errors.ts'

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without `Host` is answered 400. Node.js does that itself by
 * default, with a bare 400 and no log line; with its `requireHostHeader` off (src/http/timeouts.ts)
 * the request reaches this hook instead and gets authgate's error body, request id and log line.
 */
export function requireHostHeader(app: FastifyInstance): void {
  // Callback style: no promise and microtask on every request for a check that is synchronous.
  app.addHook('onRequest', (request, reply, done) => {
    const { httpVersionMajor: major, httpVersionMinor: minor } = request.raw
    if (request.headers.host !== undefined || major !== 1 || minor < 1) return done()
    // Answered: Fastify goes no further when a callback hook sends and does not call done.
    sendError(request, reply, 'malformed_request', 'An HTTP/1.1 request must carry a Host header')
  })
}
