import type { IncomingMessage } from 'node:http'
import type { FastifyRequest } from 'fastify'
import { clientFromChain, normaliseAddress, reportUnreadable } from '../core/client-address.ts'
import { isIPv4Address } from '../core/ip.ts'
import { kClientIp } from '../core/raw-request.ts'

// On the raw request itself, as the request id is: derived once, read by the limiter, the
// forwarder and the log line.
type WithClientIp = IncomingMessage & { [kClientIp]?: string }

/**
 * The one client IP the gateway derives, normalised (src/core/client-address.ts): with `trustProxy`
 * set to the AUTHGATE_TRUSTED_PROXIES rule, the right-most `X-Forwarded-For` entry that is not a
 * trusted proxy (Fastify's `request.ips`, proxy-addr), and otherwise the socket address. An entry
 * that is no address even after normalising gives way to the trusted proxy that forwarded it,
 * with a throttled warning and a count. The limiter keys on it and Supabase Auth is sent it.
 */
export function clientIp(request: FastifyRequest): string {
  const raw = request.raw as WithClientIp
  const known = raw[kClientIp]
  if (known !== undefined) return known
  // Without trusted proxies `ips` is undefined and `ip` is the socket's address (undefined once
  // the socket is gone, despite its type).
  const chain = request.ips
  let ip: string
  if (chain === undefined) {
    const socket = request.ip as string | undefined
    ip = socket === undefined ? 'unknown' : isIPv4Address(socket) ? socket : (normaliseAddress(socket) ?? 'unknown')
  } else {
    const address = clientFromChain(chain)
    reportUnreadable(request.log, address)
    ip = address.ip
  }
  raw[kClientIp] = ip
  return ip
}
