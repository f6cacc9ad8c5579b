import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import { throttle } from '../core/log-throttle.ts'

/** Why the sweep closed a connection: the label of authgate_connections_closed_without_request_total. */
export type SweepReason = 'never_asked' | 'stray_bytes'

export interface ConnectionSweep {
  /** Connections the sweep has closed, by reason (the metrics read it). */
  readonly closed: Readonly<Record<SweepReason, number>>
  /**
   * For closing the server: closes every client connection with no request in progress (none
   * being read past its head, none being answered), now and on each sweep until the server has
   * closed. Node.js's `closeIdleConnections` sees only connections that have finished a request,
   * and `server.close()` stops its header check: a connection that has sent nothing, or part of a
   * head, would otherwise hold the close until the socket timeout (for ever where that is off).
   */
  closeUnasked(): void
}

// Node.js's own list of an HTTP server's connections (one parser each; an upgraded connection has
// left it), found by its symbol's description: nothing is added per connection or request to
// track them. Without it (another server type) the sweep does nothing.
interface Parser {
  socket?: Socket | null
}
interface ConnectionsList {
  all(): Parser[]
  active(): Parser[]
}
let kConnections: symbol | undefined
function connectionsOf(server: Server): ConnectionsList | undefined {
  // Set on 'listening': looked for again until found.
  kConnections ??= Object.getOwnPropertySymbols(server).find((s) => s.description === 'http.server.connections')
  const list =
    kConnections === undefined
      ? undefined
      : (server as unknown as Record<symbol, ConnectionsList | undefined>)[kConnections]
  return typeof list?.all === 'function' && typeof list.active === 'function' ? list : undefined
}

/** Node.js 24's `keepAliveTimeoutBuffer`: how long after the advertised keep-alive timeout it closes an idle connection. */
export const KEEP_ALIVE_BUFFER_MS = 1000

/** A request whose body is still being read. */
function readingBody(socket: Socket): boolean {
  const incoming = (socket as Socket & { parser?: { incoming?: { complete?: boolean } | null } | null }).parser
    ?.incoming
  return incoming != null && incoming.complete !== true
}

/** A request being read past its head, or being answered. */
function inProgress(socket: Socket): boolean {
  const s = socket as Socket & { _httpMessage?: unknown; parser?: { incoming?: { complete?: boolean } | null } | null }
  if (s._httpMessage != null) return true
  const incoming = s.parser?.incoming
  return incoming != null && incoming.complete !== true
}

/**
 * Bounds how long a client connection may stay open without a request (docs/decisions.md, D187):
 * one with no request in progress that has had none for longer than `quietLimitMs`
 * (AUTHGATE_KEEP_ALIVE_TIMEOUT, the second Node.js waits after it, and AUTHGATE_HEADER_TIMEOUT) is closed without an answer, whatever
 * stray bytes it sends. Node.js's timers leave two kinds open without bound:
 * - an idle keep-alive connection that sends a bare CR or CRLF more often than the keep-alive
 *   timeout: each byte resets Node.js's idle timer and begins no request, so no header timeout runs;
 * - a connection that has sent nothing when Node.js's header check judges it, kept as an idle one
 *   by the client-error handler (D185), and any stray bytes it sends later.
 * A head begun is never closed here: Node.js's header check times it from its first byte (it is in
 * Node.js's active list). An honest client sends a whole head quickly, or its idle connection is
 * closed by the keep-alive timeout anyway.
 *
 * A periodic sweep, not a timer per request or connection: every `intervalMs` (Node.js's own
 * connections-checking interval), each connection's bytes written are compared with the last
 * sweep's; a change, or a request in progress, is a request. A connection is first seen on the
 * sweep after its accept, so the bound holds within two intervals. Each close is counted and said
 * in an `info` line, at most once per 10 s and reason with the count in between.
 */
export function sweepConnections(
  server: Server,
  options: {
    quietLimitMs: number
    /**
     * AUTHGATE_REQUEST_TIMEOUT: while the server closes, Node.js's own check has stopped, and a
     * request whose body is still arriving this long after the close began is cut.
     */
    requestTimeoutMs?: number
    intervalMs: number
    log: () => FastifyBaseLogger
    logIntervalMs?: number
  },
): ConnectionSweep {
  const { quietLimitMs, intervalMs } = options
  const closed: Record<SweepReason, number> = { never_asked: 0, stray_bytes: 0 }
  // Per connection: its bytes written at the last sweep, and when it last had a request (or was first seen).
  const seen = new WeakMap<Socket, { written: number; since: number }>()
  let closing = false
  // When the close began: a body still arriving a request timeout later is cut (Node.js's check of
  // it stops with `server.close()`, which would leave a stalled upload holding the close for ever).
  let closingSince = 0
  let timer: NodeJS.Timeout | undefined
  const lines = throttle(options.logIntervalMs ?? 10_000, {
    maxKeys: 2,
    onSkipped: (reason, skipped) => say(reason as SweepReason, skipped, true),
  })
  function say(reason: SweepReason, occurrences: number, repeated = false): void {
    options
      .log()
      .info(
        { reason, quietLimitMs, occurrences, ...(repeated ? { repeated } : {}) },
        reason === 'never_asked'
          ? 'client connection closed: no request within the keep-alive and header timeouts of its accept'
          : 'client connection closed: bytes that began no request held it past the keep-alive and header timeouts',
      )
  }

  const sweep = () => {
    const list = connectionsOf(server)
    if (list === undefined) return
    if (closing) return closeUnasked()
    const all = list.all()
    if (all.length === 0) return
    const now = performance.now()
    let begun: Set<Parser> | undefined
    for (let i = 0; i < all.length; i++) {
      const socket = all[i]!.socket
      if (socket == null || socket.destroyed) continue
      const state = seen.get(socket)
      if (state === undefined) {
        seen.set(socket, { written: socket.bytesWritten, since: now })
        continue
      }
      if (socket.bytesWritten !== state.written || inProgress(socket)) {
        state.written = socket.bytesWritten
        state.since = now
        continue
      }
      if (now - state.since <= quietLimitMs) continue
      // A head begun (or a connection Node.js has not judged yet): Node.js's header check times it.
      begun ??= new Set(list.active())
      if (begun.has(all[i]!)) continue
      const reason: SweepReason = state.written === 0 ? 'never_asked' : 'stray_bytes'
      closed[reason]++
      socket.destroy()
      const taken = lines.take(reason)
      if (taken.write) say(reason, taken.occurrences)
    }
  }
  function closeUnasked(): void {
    if (!closing) closingSince = performance.now()
    closing = true
    const list = connectionsOf(server)
    if (list === undefined) return
    const stalled =
      options.requestTimeoutMs !== undefined && performance.now() - closingSince > options.requestTimeoutMs
    const all = list.all()
    for (let i = 0; i < all.length; i++) {
      const socket = all[i]!.socket
      if (socket == null || socket.destroyed) continue
      if (!inProgress(socket) || (stalled && readingBody(socket))) socket.destroy()
    }
  }

  server.on('listening', () => {
    clearInterval(timer)
    closing = false
    closingSince = 0
    timer = setInterval(sweep, intervalMs).unref()
  })
  server.on('close', () => clearInterval(timer))
  return { closed, closeUnasked }
}
