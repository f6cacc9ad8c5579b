import type { IncomingMessage } from 'node:http'
import { isIP, type BlockList } from 'node:net'
import { unmapIPv4 } from '../core/ip.ts'
import { peerIsTrusted } from '../observability/request-id.ts'

/**
 * The client IP of a request that does not go through Fastify (the socket handshake), derived as
 * Fastify derives `request.ip` with `trustProxy` set to AUTHGATE_TRUSTED_PROXIES: from the
 * socket's address leftwards through `X-Forwarded-For`, the first address that is not a trusted
 * proxy (or the left-most when all are). Without trusted proxies, the socket's address.
 */
export function socketClientIp(req: IncomingMessage, peers: BlockList | undefined): string {
  const socketIp = req.socket.remoteAddress ?? 'unknown'
  if (peers === undefined || !peerIsTrusted(peers, socketIp)) return unmapIPv4(socketIp)
  const header = req.headers['x-forwarded-for']
  const list = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  let ip = socketIp
  for (let i = list.length - 1; i >= 0; i--) {
    ip = list[i]!
    // Not an address (a forged header): untrusted, so it is the client's, as proxy-addr reads it.
    if (isIP(ip) === 0 || !peerIsTrusted(peers, ip)) break
  }
  return unmapIPv4(ip)
}
