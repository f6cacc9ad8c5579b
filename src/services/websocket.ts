import type { ClientRequest, IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import type { ErrorCode } from '../errors.ts'
import { serviceErrorResponse } from './errors.ts'
import { requestIdGenerator, trustedProxyRule } from '../observability/request-id.ts'
import { redactUrl } from '../observability/redact.ts'
import { forwardedView, outboundRequestHeaders } from '../proxy/headers.ts'
import type { ServiceUpstream } from './config.ts'
import { closeFrame, FrameCursor, GOING_AWAY, POLICY_VIOLATION } from './frames.ts'
import type { ServiceProxy } from './proxy.ts'
import { judgeServicePath } from './path.ts'
import { planServiceRequest } from './request.ts'
import { PhoenixFrames, phoenixSwap } from '../sessions/socket-swap.ts'
import { hostFault } from '../http/host.ts'
import { repeatedCredential } from './credentials.ts'
import { socketClientIp } from './socket-ip.ts'
import { serviceTemplate } from './table.ts'
import type { RawDecider, RawRefusal } from '../ratelimit/index.ts'

// By process.getBuiltinModule, not an import: an ESM import of node:http reads its lazy WebSocket
// getters, which load Node.js's bundled undici (src/observability/metrics.ts says the same).
const http = process.getBuiltinModule('node:http')
const https = process.getBuiltinModule('node:https')

/**
 * The relayed sockets as the metrics read them: open now and opened in all, by service label, and
 * each one's lifetime as it closes (src/services/metrics.ts observes it).
 */
export class SocketStats {
  readonly open = new Map<string, number>()
  readonly opened = new Map<string, number>()
  /** Set by the metrics: called once per socket that was open, when it closes. */
  onClosed: ((service: string, seconds: number) => void) | undefined

  opening(service: string): void {
    this.open.set(service, (this.open.get(service) ?? 0) + 1)
    this.opened.set(service, (this.opened.get(service) ?? 0) + 1)
  }

  closing(service: string, seconds: number): void {
    this.open.set(service, (this.open.get(service) ?? 1) - 1)
    this.onClosed?.(service, seconds)
  }
}

/** The monotonic clock the idle timeouts read, bound once: a call per chunk relayed. */
const now = performance.now.bind(performance)

/** How long a stopping authgate waits for a socket's frame in transit to end before cutting it. */
const STOP_GRACE_MS = 1000

/** Response headers of the upstream's handshake that describe its connection to authgate, not the client's. */
const NOT_RELAYED = new Set(['keep-alive', 'proxy-connection', 'transfer-encoding', 'content-length'])

/**
 * Realtime's Phoenix socket relayed at the TCP level once the handshake is done: authgate checks
 * the key and rewrites the upgrade request as Supabase's gateway does (path, `x-api-key`, `Host`,
 * X-Forwarded-*), sends it to the upstream, relays the upstream's 101 (its subprotocol and
 * extensions included) and then pipes the frames both ways untouched. No WebSocket library: the
 * frames are the client's and Realtime's business. Each socket closes when the other does, when
 * nothing moves either way for the row's idle time (above Realtime's 25 s heartbeat), and when
 * authgate stops: then with a close frame 1001 (going away) written between two of Realtime's
 * frames, so the client reconnects (to another instance) as after any server restart.
 */
export function relayWebSockets(
  app: FastifyInstance,
  proxy: ServiceProxy,
  upstreams: ServiceUpstream[],
  stats: SocketStats,
  trustedProxies: readonly string[],
): void {
  const byPath = new Map(upstreams.map((u) => [u.row.prefix, u]))
  // AUTHGATE_RATE_LIMIT_ROUTES on a socket's route (`GET /realtime/v1/websocket`): the limiter's
  // own decision for each handshake, per client IP.
  const limits = new Map<string, RawDecider>()
  for (const u of upstreams) {
    const decide = app.authgate.rateLimiter?.rawDeciderFor('GET', serviceTemplate(u.row))
    if (decide !== undefined) limits.set(u.row.prefix, decide)
  }
  /** Each open socket's way of closing with 1001, resolved once it is closed. */
  const open = new Set<() => Promise<void>>()
  const idHeader = app.authgate.config.requestIdHeader
  // As on the HTTP routes: a trusted proxy's request id and X-Forwarded-For are believed.
  const requestId = requestIdGenerator(idHeader, trustedProxies)
  const trusted = trustedProxies.length > 0 ? trustedProxyRule(trustedProxies) : undefined
  const pathOf = (url: string | undefined) => {
    const u = url ?? '/'
    const q = u.indexOf('?')
    return q === -1 ? u : u.slice(0, q)
  }
  // Only WebSocket handshakes on a socket path are taken from the HTTP server (where Node.js lets
  // the server choose): any other `Upgrade` (h2c) stays an ordinary request for Fastify.
  const server = app.server as typeof app.server & { shouldUpgradeCallback?: (req: IncomingMessage) => boolean }
  server.shouldUpgradeCallback = (req) =>
    req.headers.upgrade?.toLowerCase() === 'websocket' && byPath.has(pathOf(req.url))

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const id = requestId(req)
    const started = performance.now()
    const upstream = byPath.get(pathOf(req.url))
    const log = app.log.child({ reqId: id })
    const write = (answer: RawRefusal, code: string) => {
      const head = [`HTTP/1.1 ${answer.status} ${http.STATUS_CODES[answer.status] ?? ''}`]
      for (const [name, value] of Object.entries(answer.headers)) head.push(`${name}: ${value}`)
      head.push(`${idHeader}: ${id}`, 'connection: close', `content-length: ${Buffer.byteLength(answer.body)}`)
      socket.end(`${head.join('\r\n')}\r\n\r\n${answer.body}`)
      log.info({ route: req.url && redactUrl(req.url), status: answer.status, code }, 'websocket refused')
    }
    const refuse = (code: ErrorCode, message?: string) => write(serviceErrorResponse(code, message), code)
    socket.on('error', () => socket.destroy())
    if (upstream === undefined || req.method !== 'GET') return refuse('not_found')
    // As on every HTTP route (src/http/host.ts): one Host, or which one counts is ambiguous.
    const hostRefusal = hostFault(req)
    if (hostRefusal !== undefined) return refuse('malformed_request', hostRefusal)
    // As on the services' HTTP routes (src/services/credentials.ts): Realtime's Cowboy joins a
    // repeated header, so the key authgate judged would not be the one Realtime reads.
    const credentialRefusal = repeatedCredential(req.rawHeaders)
    if (credentialRefusal !== undefined) return refuse('malformed_request', credentialRefusal)
    const ip = socketClientIp(req, trusted, log)
    // The route's per-client limit, which its onRequest hook applies to the HTTP requests (this
    // event never passes through Fastify's hooks): before the key and path are judged, as there.
    const limit = limits.get(upstream.row.prefix)
    if (limit !== undefined)
      limit(req, ip).then(
        (refusal) => {
          if (socket.destroyed) return
          if (refusal !== undefined) write(refusal, 'over_request_rate_limit')
          else relay(upstream)
        },
        (err: unknown) => {
          log.error({ err }, 'websocket handshake failed')
          socket.destroy()
        },
      )
    else relay(upstream)

    /** The handshake, let through the limit when its route has one: judged, then relayed. */
    function relay(upstream: ServiceUpstream) {
      const path = judgeServicePath(upstream.row, 'GET', req.url ?? '/')
      if (!path.ok) return refuse(path.code, path.message)
      const plan = planServiceRequest(upstream, proxy.keys, proxy.defaultKey, path, req.headers)
      if (!plan.ok) return refuse(plan.code)

      const target = new URL(upstream.origin)
      // As Fastify's `request.host` and `request.protocol` read them: a trusted proxy's view, else the socket's.
      const { host, proto } = forwardedView(req, trusted)
      // Cookie sessions: stand-ins in the client's join and token messages become the real token; the
      // frames must then be readable, so no compression is offered to Realtime.
      const sessions = proxy.sessions
      const swap = sessions && phoenixSwap(sessions, req, { clientIp: ip, requestId: id, proto, log })
      const headers = outboundRequestHeaders(req.rawHeaders, req.headers, {
        identity: proxy.identityOf(ip, id),
        host,
        proto,
        ownCookies: sessions === undefined ? undefined : [sessions.sessions.config.cookieName],
        replaced: [...proxy.ownNames(), ...plan.replaced, ...(swap ? ['sec-websocket-extensions'] : [])],
        set: [
          // The handshake's own hop-by-hop pair, which the hygiene list drops from every other request.
          'connection',
          'Upgrade',
          'upgrade',
          'websocket',
          ...(upstream.host === undefined ? ['host', target.host] : []),
          ...plan.set,
        ],
      })
      const client = target.protocol === 'https:' ? https : http
      const up: ClientRequest = client.request({
        host: target.hostname,
        port: target.port,
        method: 'GET',
        path: plan.path,
        headers: headers as unknown as Record<string, string>,
        timeout: upstream.timeoutMs,
      })
      up.on('timeout', () =>
        up.destroy(Object.assign(new Error('handshake timed out'), { code: 'ETIMEDOUT_HANDSHAKE' })),
      )
      up.on('error', (err: Error & { code?: string }) => {
        if (socket.destroyed || !socket.writable) return
        log.warn({ service: upstream.label, err: { code: err.code, message: err.message } }, 'service unreachable')
        if (err.code === 'ETIMEDOUT_HANDSHAKE')
          refuse('request_timeout', `The ${upstream.label} service did not answer in time`)
        else refuse('backend_unreachable', `The ${upstream.label} service could not be reached`)
      })
      // The upstream refused the upgrade (a 403 for a bad token, say): its answer, then the end.
      up.on('response', (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const body = Buffer.concat(chunks)
          const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage}`]
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            const name = res.rawHeaders[i]!
            if (NOT_RELAYED.has(name.toLowerCase()) || name.toLowerCase() === 'connection') continue
            lines.push(`${name}: ${res.rawHeaders[i + 1]!}`)
          }
          lines.push(`${idHeader}: ${id}`, 'connection: close', `content-length: ${body.length}`)
          socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]))
          log.info({ service: upstream.label, status: res.statusCode }, 'websocket refused by the service')
        })
      })
      up.on('upgrade', (res, upSocket, upHead) => {
        const lines = [`HTTP/1.1 101 ${res.statusMessage || 'Switching Protocols'}`]
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i]!
          if (NOT_RELAYED.has(name.toLowerCase())) continue
          lines.push(`${name}: ${res.rawHeaders[i + 1]!}`)
        }
        lines.push(`${idHeader}: ${id}`)
        if (socket.destroyed) {
          upSocket.destroy()
          return
        }
        // Realtime's bytes are written by hand, not piped: on stop the relay must know where its
        // frames end to put its own close frame between two of them.
        const cursor = new FrameCursor()
        // No Nagle on either hop: the endpoints chose their framing, and a relay that holds a small
        // frame back for an ACK adds latency to every message and cost to every write.
        upSocket.setNoDelay(true)
        ;(socket as Socket).setNoDelay(true)
        socket.write(`${lines.join('\r\n')}\r\n\r\n`)
        if (upHead.length > 0) {
          cursor.read(upHead)
          socket.write(upHead)
        }
        let received = upHead.length
        let sent = head.length
        /** When the last chunk came from either side (the idle timeout's start). */
        let moved = now()
        // With the swap, the client's frames are read in the data handler and written to Realtime
        // from there: no stream between the two sockets, and no tick of its own per chunk.
        const frames =
          swap &&
          new PhoenixFrames(
            swap,
            (bytes) => {
              if (!upSocket.write(bytes)) socket.pause()
            },
            // A stand-in the swap refuses went no further: the socket closes with 1008 and the fault.
            (fault) => void stop(POLICY_VIOLATION, `stand-in token refused: ${fault}`),
          )
        const fromClient = (c: Buffer) => {
          if (frames === undefined || upSocket.destroyed) return
          const waiting = frames.read(c)
          if (waiting === undefined) return
          // A frame's token is being swapped: the client waits, its chunks read meanwhile queued.
          socket.pause()
          waiting.then(
            () => {
              if (!upSocket.writableNeedDrain) socket.resume()
            },
            () => upSocket.destroy(),
          )
        }
        if (frames) {
          socket.on('data', (c: Buffer) => {
            sent += c.length
            moved = now()
            fromClient(c)
          })
          upSocket.on('drain', () => {
            if (!frames.swapping) socket.resume()
          })
        } else {
          socket.on('data', (c: Buffer) => {
            sent += c.length
            moved = now()
          })
          socket.pipe(upSocket)
        }
        let stopping: (() => void) | undefined
        upSocket.on('data', (c: Buffer) => {
          received += c.length
          moved = now()
          if (stopping === undefined) {
            cursor.read(c)
            if (!socket.write(c)) upSocket.pause()
            return
          }
          const upTo = cursor.read(c, true)
          if (upTo > 0) socket.write(c.subarray(0, upTo))
          if (cursor.atBoundary) stopping()
        })
        socket.on('drain', () => upSocket.resume())
        // Idle, not total: a socket with traffic (the heartbeat at least) lives as long as it is used,
        // both closed once nothing has come either way for the row's idle time. One timer reads the
        // time of the last chunk when it falls due and is set again for the rest, instead of each
        // socket's own timeout, which Node.js moves in its timer list at every read and write (four
        // times per chunk relayed). The sockets' own timeouts, the handshake's and the server's, are off.
        upSocket.setTimeout(0)
        ;(socket as Socket).setTimeout(0)
        const idleMs = upstream.timeoutMs
        const idle = () => {
          const quiet = now() - moved
          if (quiet < idleMs) {
            idleTimer = setTimeout(idle, idleMs - quiet).unref()
            return
          }
          upSocket.destroy()
          socket.destroy()
        }
        let idleTimer = setTimeout(idle, idleMs).unref()
        upSocket.on('error', () => upSocket.destroy())
        stats.opening(upstream.label)
        let closed = false
        let whenClosed: () => void = () => {}
        const done = new Promise<void>((resolve) => (whenClosed = resolve))
        let closeCode = GOING_AWAY
        /**
         * Whether the close frame went out: not when Realtime's frame in transit did not end within
         * the grace, nor when either side closed first.
         */
        let closeFrameSent = false
        const stop = (code = GOING_AWAY, reason = ''): Promise<void> => {
          if (closed || stopping !== undefined) return done
          closeCode = code
          const grace = setTimeout(() => socket.destroy(), STOP_GRACE_MS)
          stopping = () => {
            stopping = () => {}
            clearTimeout(grace)
            closeFrameSent = true
            socket.unpipe(upSocket)
            upSocket.destroy()
            socket.end(closeFrame(code, reason))
            // A client that does not close its side is not waited for.
            setTimeout(() => socket.destroy(), STOP_GRACE_MS).unref()
          }
          if (cursor.atBoundary) stopping()
          return done
        }
        open.add(stop)
        if (head.length > 0) {
          if (frames) fromClient(head)
          else upSocket.write(head)
        }
        const close = () => {
          if (closed) return
          closed = true
          open.delete(stop)
          clearTimeout(idleTimer)
          // Going away: the close frame written with end() is left to reach the client.
          if (stopping === undefined) socket.destroy()
          upSocket.destroy()
          const durationMs = performance.now() - started
          stats.closing(upstream.label, durationMs / 1000)
          whenClosed()
          log.info(
            {
              route: upstream.row.prefix,
              service: upstream.label,
              status: 101,
              ip,
              durationMs: Math.round(durationMs),
              bytesIn: sent,
              bytesOut: received,
              // The close frame's code when authgate wrote one; a socket it stopped without one says so.
              ...(stopping === undefined ? {} : closeFrameSent ? { closeCode } : { closedWithoutFrame: true }),
            },
            'websocket closed',
          )
        }
        socket.on('close', close)
        upSocket.on('close', close)
        // The server's sockets are half-open by default: a client's FIN ends its socket, not half of it.
        socket.on('end', close)
      })
      up.end()
    }
  })

  // A stopping authgate ends its sockets once readiness has turned the load balancer away (the
  // shutdown delay): 1001 to each client, which reconnects to another instance.
  app.addHook('preClose', async () => {
    await Promise.all([...open].map((stop) => stop()))
  })
}
