import type { onRequestHookHandler } from 'fastify'
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

/** The service routes' first hook: a repeated credential header is 400 `malformed_request`, nothing forwarded. */
export const refuseRepeatedCredentials: onRequestHookHandler = function refuseRepeatedCredentials(
  request,
  reply,
  done,
) {
  const fault = repeatedCredential(request.raw.rawHeaders)
  if (fault === undefined) return done()
  request.log.info({ reason: fault }, 'service request refused')
  // Answered: Fastify goes no further when a callback hook sends and does not call done.
  sendServiceError(reply, 'malformed_request', fault)
}
