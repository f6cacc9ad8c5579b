import type { FastifyInstance } from 'fastify'
import { sendError } from '../errors.ts'

/** Whether a raw header list (`[name, value, ...]`) names `Host` more than once. */
export function repeatsHost(rawHeaders: readonly string[]): boolean {
  let seen = false
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    // Length first: one comparison for nearly every other name.
    if (name.length !== 4 || name.toLowerCase() !== 'host') continue
    if (seen) return true
    seen = true
  }
  return false
}

/**
 * RFC 9112 §3.2: a request without `Host` (HTTP/1.1) or with more than one is answered 400. Node.js
 * answers a missing one itself by default, with a bare 400 and no log line; with its
 * `requireHostHeader` off (src/http/timeouts.ts) the request reaches this hook instead and gets
 * authgate's error body, request id and log line. Node.js takes a repeated `Host` and keeps the
 * first (`request.headers.host`) while another hop may read the last: the host a route sees and the
 * one a proxy in front routed by would differ, so it is refused (Go's net/http refuses it too).
 */
export function requireHostHeader(app: FastifyInstance): void {
  // Callback style: no promise and microtask on every request for a check that is synchronous.
  app.addHook('onRequest', (request, reply, done) => {
    const { httpVersionMajor: major, httpVersionMinor: minor, rawHeaders } = request.raw
    if (request.headers.host === undefined) {
      if (major !== 1 || minor < 1) return done()
      // Answered: Fastify goes no further when a callback hook sends and does not call done.
      sendError(request, reply, 'malformed_request', 'An HTTP/1.1 request must carry a Host header')
      return
    }
    if (!repeatsHost(rawHeaders)) return done()
    // The request's log line carries the reason.
    sendError(request, reply, 'malformed_request', 'A request must carry one Host header')
  })
}
