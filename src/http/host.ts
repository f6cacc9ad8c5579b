import type { FastifyInstance } from 'fastify'
import { sendError } from '../errors.ts'

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without `Host` is answered 400. Node.js does that itself by
 * default, with a bare 400 and no log line; with its `requireHostHeader` off (src/http/timeouts.ts)
 * the request reaches this hook instead and gets authgate's error body, request id and log line.
 */
export function requireHostHeader(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    const { httpVersionMajor: major, httpVersionMinor: minor } = request.raw
    if (request.headers.host !== undefined || major !== 1 || minor < 1) return
    return sendError(request, reply, 'malformed_request', 'An HTTP/1.1 request must carry a Host header')
  })
}
