import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { normaliseAddress } from '../core/client-address.ts'
import { isIPv4Address } from '../core/ip.ts'
import type { EarlyDecider, EarlyRefusal } from '../ratelimit/index.ts'

export interface EarlyRoute {
  method: string
  /** The route's URL as Fastify has it (prefix included, no parameters). */
  url: string
  decide: EarlyDecider
}

export interface EarlyRefusalOptions<R extends EarlyRoute = EarlyRoute> {
  /** The routes, as the caller's own objects: `onRefused` gets back the one that answered. */
  routes: readonly R[]
  /** The request id header and generator the Fastify path uses. */
  requestIdHeader: string
  requestId: (req: IncomingMessage) => string
  /**
   * The metrics and the log line of each refusal, as the Fastify path records them. Arguments, not
   * an object: nothing is built per refusal for a logger that writes no line at its level.
   */
  onRefused: (req: IncomingMessage, route: R, id: string, ip: string, startedAt: number, refusal: EarlyRefusal) => void
}

/**
 * Puts the rate limit of the limited routes ahead of Fastify on `server`: a request to one of them
 * from a client over its limit is answered 429 from the raw request, with the headers, body, log
 * line and metrics the route's hook would give, at a fraction of the cost of routing it through
 * Fastify (the refusals are what a credential-stuffing flood is made of). Anything else, and any
 * request this cannot decide exactly as Fastify would, goes to Fastify unchanged; a request let
 * through carries its decision to the route's hook, which does not decide again.
 *
 * Only for a synchronous store and a client IP that is the socket's address (no trusted proxies),
 * and not with CORS (whose headers the 429 would lack): the caller checks.
 */
export function installEarlyRefusal<R extends EarlyRoute>(server: Server, options: EarlyRefusalOptions<R>): void {
  // By path, then method: no string built per request to look a route up.
  const byPath = new Map<string, R[]>()
  for (const route of options.routes) byPath.set(route.url, [...(byPath.get(route.url) ?? []), route])
  if (byPath.size === 0) return
  const { requestIdHeader, requestId, onRefused } = options
  const [fastify, ...others] = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>
  if (fastify === undefined || others.length > 0)
    throw new Error('early refusal: expected Fastify’s one request listener')
  server.removeListener('request', fastify)
  // The socket timeout (Node.js's `server.timeout`, AUTHGATE_SOCKET_TIMEOUT) armed per request
  // here instead of by Node.js on every request and connection: a timer made and refreshed per
  // request cost the early 429 a fifth of its CPU (docs/decisions.md, D154). Every request Fastify
  // answers gets it as before, from its arrival; a refusal written whole needs none (the
  // keep-alive timeout takes over once it is finished), and one the client leaves unread, or
  // queued behind another answer, gets it then.
  const socketTimeout = server.timeout
  server.timeout = 0
  const toFastify =
    socketTimeout > 0
      ? (req: IncomingMessage, res: ServerResponse) => {
          req.socket.setTimeout(socketTimeout)
          fastify(req, res)
        }
      : fastify
  // The last URL's routes and the last address's client IP: a flood sends one URL from one
  // address over and over, so its path is cut and looked up, and its address read, once instead
  // of per request (a fresh slice of the URL cost its own hash in the map; docs/decisions.md,
  // D216). A different URL or address is looked up as before.
  let lastUrl: string | undefined
  let lastCandidates: R[] | undefined
  let lastAddress: string | undefined
  let lastIp = ''
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? ''
    let candidates: R[] | undefined
    if (url === lastUrl) candidates = lastCandidates
    else {
      const q = url.indexOf('?')
      candidates = byPath.get(q === -1 ? url : url.slice(0, q))
      lastUrl = url
      lastCandidates = candidates
    }
    if (candidates === undefined) return toFastify(req, res)
    // A loop, not `find`: no closure per request.
    let route: R | undefined
    for (let i = 0; i < candidates.length && route === undefined; i++)
      if (candidates[i]!.method === req.method) route = candidates[i]
    if (route === undefined) return toFastify(req, res)
    const address = req.socket.remoteAddress
    // Without Host (HTTP/1.1), Fastify's hook answers 400: left to it, as is a closed socket.
    if (address === undefined || req.headers.host === undefined) return toFastify(req, res)
    const startedAt = performance.now()
    if (address !== lastAddress) {
      // Normalised as `clientIp` normalises it (a socket's IPv6 may carry a zone id).
      lastIp = isIPv4Address(address) ? address : (normaliseAddress(address) ?? address)
      lastAddress = address
    }
    const ip = lastIp
    const refusal = route.decide(req, ip)
    if (refusal === undefined) return toFastify(req, res)
    const id = requestId(req)
    // The refusal's list keeps its first pair for the request id: filled in, not copied.
    const headers = refusal.headers
    headers[0] = requestIdHeader
    headers[1] = id
    // The body is read and dropped, as Node.js would once the answer is finished, without its
    // listener bookkeeping: the connection stays usable for the client's next request.
    req.resume()
    res.writeHead(429, headers)
    res.end(refusal.body, refusal.encoding)
    // Not all of it in the kernel's hands (a client that does not read), or waiting for an earlier
    // answer on the connection: the socket timeout bounds how long it may stay so.
    if (socketTimeout > 0 && (res.socket === null || res.socket.writableLength > 0))
      req.socket.setTimeout(socketTimeout)
    onRefused(req, route, id, ip, startedAt, refusal)
  })
}
