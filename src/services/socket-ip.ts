import type { IncomingMessage } from 'node:http'
import { clientFromChain, forwardedChain, reportUnreadable } from '../core/client-address.ts'

/**
 * The client IP of a request that does not go through Fastify (the socket handshake), derived as
 * `clientIp` derives it for a request through Fastify (src/proxy/client-ip.ts): from the socket's
 * address leftwards through `X-Forwarded-For` while the address is a trusted proxy's, each entry
 * normalised; an entry that is no address gives way to the proxy that forwarded it. Without trusted
 * proxies, the socket's address.
 */
export function socketClientIp(
  req: IncomingMessage,
  trusted: ((address: string) => boolean) | undefined,
  log: { warn(details: object, message: string): void },
): string {
  const chain = forwardedChain(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted ?? (() => false))
  const address = clientFromChain(chain)
  reportUnreadable(log, address)
  return address.ip
}
