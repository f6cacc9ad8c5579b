import type { Server } from 'node:http'
import type { FastifyHttpOptions } from 'fastify'
import type { CoreConfig } from '../config.ts'

/**
 * The server's limits on clients, as Fastify and Node.js options:
 * - `headersTimeout`: the request head must arrive within AUTHGATE_HEADER_TIMEOUT of its first
 *   byte. (Node.js counts a connection's first head from the connection's start; the client-error
 *   handler keeps a connection that has sent nothing as an idle one instead of answering it 408.)
 * - `requestTimeout`: the whole request, body included, within AUTHGATE_REQUEST_TIMEOUT (it stops
 *   counting once the request is received: a slow backend is the backend timeout's business);
 * - `connectionsCheckingInterval`: how often Node.js looks for connections past those two. Its
 *   default, 30 s, is why a slow client used to hold on for a minute and a half.
 * - `connectionTimeout` (Node.js's `server.timeout`): a connection with no byte moving either way
 *   for AUTHGATE_SOCKET_TIMEOUT is closed. The two above stop counting once the request is in, so
 *   without it a client that asks for a large answer (the 4.9 MB reference page script) and never
 *   reads it would hold its connection for ever. Where the early refusal is installed, it arms
 *   this timeout itself, request by request (src/http/early-refusal.ts);
 * - `maxHeaderSize`, `keepAliveTimeout`, `maxRequestsPerSocket`;
 * - `requireHostHeader` off: src/http/host.ts answers a request without `Host` instead of Node.js.
 * Each rejection reaches the client-error handler (src/http/client-errors.ts). Together with the
 * connection sweep (src/http/connection-sweep.ts: no request for the keep-alive and header timeouts,
 * whatever stray bytes come) they bound how long any one client connection is held (a slow head, a
 * slow body, an idle keep-alive or one that has not sent its first request); how many are held at
 * once is src/http/connection-limit.ts's.
 */
export function timeoutOptions(config: CoreConfig): FastifyHttpOptions<Server> {
  return {
    http: {
      headersTimeout: config.headerTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: checkingIntervalMs(config),
      maxHeaderSize: config.maxHeaderSize,
      // A request without Host is refused by src/http/host.ts, in authgate's shape and logged.
      requireHostHeader: false,
    },
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.socketTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    maxRequestsPerSocket: config.maxRequestsPerSocket,
    // Requests arriving on open connections while shutting down are served, not refused with 503:
    // the load balancer may still send some until readiness has turned.
    return503OnClosing: false,
  }
}

/**
 * How often Node.js checks heads and requests against their timeouts: a quarter of the shorter, at
 * most a second. The connection sweep (src/http/connection-sweep.ts) runs as often.
 */
export function checkingIntervalMs(config: CoreConfig): number {
  return Math.max(50, Math.min(1000, Math.floor(Math.min(config.headerTimeoutMs, config.requestTimeoutMs) / 4)))
}
