import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { repeatsHeader } from '../http/repeated-header.ts'
import { sendServiceError } from './errors.ts'

/**
 * Why a service request's credentials are refused, or undefined when no credential header comes
 * more than once. authgate, PostgREST, Storage and Node.js read the first of a repeated header;
 * Realtime's Cowboy and the functions' Deno join them into one value: the credential authgate
 * judged, counted and swapped would not be the one every service acts on. The raw list is read, in
 * any case of the names (`Authorization` and `authorization` are one header).
 */
export function repeatedCredential(rawHeaders: readonly string[]): string | undefined {
  const repeated = repeatsHeader(rawHeaders, 'authorization')
    ? 'Authorization'
    : repeatsHeader(rawHeaders, 'apikey')
      ? 'apikey'
      : undefined
  return repeated === undefined ? undefined : `A request to a service must carry one ${repeated} header`
}

/**
 * Answers a service request whose credential header comes more than once: 400 `malformed_request`,
 * nothing forwarded. True when it answered.
 */
export function refusedCredentials(request: FastifyRequest, reply: FastifyReply): boolean {
  const fault = repeatedCredential(request.raw.rawHeaders)
  if (fault === undefined) return false
  request.log.info({ reason: fault }, 'service request refused')
  sendServiceError(reply, 'malformed_request', fault)
  return true
}

/**
 * The service routes' first hook where they have other `onRequest` hooks (a limit, CORS), which must
 * not read one copy of a repeated credential while a service reads another; a route with none runs
 * the same check at the start of its handler (src/services/proxy.ts), with no hook phase.
 */
export const refuseRepeatedCredentials: onRequestHookHandler = function refuseRepeatedCredentials(
  request,
  reply,
  done,
) {
  // Answered: Fastify goes no further when a callback hook sends and does not call done.
  if (!refusedCredentials(request, reply)) done()
}
