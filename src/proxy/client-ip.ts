import type { FastifyRequest } from 'fastify'
import { unmapIPv4 } from '../core/ip.ts'

/**
 * The one client IP the gateway derives: Fastify's `request.ip`, which with `trustProxy` set to the
 * AUTHGATE_TRUSTED_PROXIES list is the right-most X-Forwarded-For entry that is not a trusted
 * proxy (proxy-addr), and otherwise the socket address. IPv4-mapped IPv6 is unwrapped so that a
 * dual-stack listener keys one client one way (rate limits) and Supabase Auth records a plain IPv4.
 */
export function clientIp(request: FastifyRequest): string {
  // request.ip is undefined once the socket is gone (despite its type).
  const ip = (request.ip as string | undefined) ?? 'unknown'
  return unmapIPv4(ip)
}
