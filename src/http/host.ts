import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { sendError } from '../errors.ts'
import { repeatsHeader } from './repeated-header.ts'

/**
 * Why a request's `Host` headers are refused, or undefined when there is exactly one that can be a
 * host: none (HTTP/1.1), two, or one holding a list (`a, b`: a host has no comma, and a proxy that
 * joined two copies would make the same ambiguity as two headers).
 */
export function hostFault(req: {
  headers: { host?: string | undefined }
  rawHeaders: readonly string[]
  httpVersionMajor: number
  httpVersionMinor: number
}): string | undefined {
  const host = req.headers.host
  if (host === undefined)
    return req.httpVersionMajor === 1 && req.httpVersionMinor >= 1
      ? 'An HTTP/1.1 request must carry a Host header'
      : undefined
  if (host.includes(',') || repeatsHeader(req.rawHeaders, 'host')) return 'A request must carry one Host header'
  return undefined
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
    // Answered: Fastify goes no further when a callback hook sends and does not call done. The
    // request's log line carries the reason.
    if (!refusedHost(request, reply)) done()
  })
}

/**
 * The same check where no hook can stop what follows (the service's log controller, ahead of the
 * `onRequest` hooks): true when it answered. Fastify skips every later step of a request whose reply
 * is `sent`; an answer still passing `onSend` hooks that wait is not `sent` yet, so the reply is
 * then marked taken over (`hijack`): the answer is written when those hooks are done, and nothing
 * else runs.
 */
export function refusedHost(request: FastifyRequest, reply: FastifyReply): boolean {
  const fault = hostFault(request.raw)
  if (fault === undefined) return false
  sendError(request, reply, 'malformed_request', fault)
  if (!reply.sent) reply.hijack()
  return true
}
