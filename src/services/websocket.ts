import type { ClientRequest, IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import type { ErrorCode } from '../errors.ts'
import { serviceErrorResponse } from './errors.ts'
import { newRequestId } from '../observability/request-id.ts'
import { redactUrl } from '../observability/redact.ts'
import { unmapIPv4 } from '../core/ip.ts'
import { outboundRequestHeaders } from '../proxy/headers.ts'
import type { ServiceUpstream } from './config.ts'
import type { ServiceProxy } from './proxy.ts'
import { planServiceRequest } from './request.ts'
import { phoenixSwap } from '../sessions/socket-swap.ts'

// By process.getBuiltinModule, not an import: an ESM import of node:http reads its lazy WebSocket
// getters, which load Node.js's bundled undici (src/observability/metrics.ts says the same).
const http = process.getBuiltinModule('node:http')
const https = process.getBuiltinModule('node:https')

/** Response headers of the upstream's handshake that describe its connection to authgate, not the client's. */
const NOT_RELAYED = new Set(['keep-alive', 'proxy-connection', 'transfer-encoding', 'content-length'])

/**
 * Realtime's Phoenix socket relayed at the TCP level once the handshake is done: authgate checks
 * the key and rewrites the upgrade request as Supabase's gateway does (path, `x-api-key`, `Host`,
 * X-Forwarded-*), sends it to the upstream, relays the upstream's 101 (its subprotocol and
 * extensions included) and then pipes the frames both ways untouched. No WebSocket library: the
 * frames are the client's and Realtime's business. Each socket closes when the other does, when
 * nothing moves either way for the row's idle time (above Realtime's 25 s heartbeat), and when
 * authgate stops.
 */
export function relayWebSockets(app: FastifyInstance, proxy: ServiceProxy, upstreams: ServiceUpstream[]): void {
  const byPath = new Map(upstreams.map((u) => [u.row.prefix, u]))
  const open = new Set<Duplex>()
  const idHeader = app.authgate.config.requestIdHeader
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
    const id = newRequestId()
    const started = performance.now()
    const upstream = byPath.get(pathOf(req.url))
    const log = app.log.child({ reqId: id })
    const refuse = (code: ErrorCode, message?: string) => {
      const answer = serviceErrorResponse(code, message)
      const head = [`HTTP/1.1 ${answer.status} ${http.STATUS_CODES[answer.status] ?? ''}`]
      for (const [name, value] of Object.entries(answer.headers)) head.push(`${name}: ${value}`)
      head.push(`${idHeader}: ${id}`, 'connection: close', `content-length: ${Buffer.byteLength(answer.body)}`)
      socket.end(`${head.join('\r\n')}\r\n\r\n${answer.body}`)
      log.info({ route: req.url && redactUrl(req.url), status: answer.status, code }, 'websocket refused')
    }
    socket.on('error', () => socket.destroy())
    if (upstream === undefined || req.method !== 'GET') return refuse('not_found')
    const plan = planServiceRequest(upstream, proxy.keys, proxy.defaultKey, req.url ?? '/', req.headers)
    if (!plan.ok) return refuse(plan.code)

    const target = new URL(upstream.origin)
    const ip = unmapIPv4(req.socket.remoteAddress ?? '')
    const proto = 'encrypted' in req.socket && req.socket.encrypted ? 'https' : 'http'
    // Cookie sessions: stand-ins in the client's join and token messages become the real token; the
    // frames must then be readable, so no compression is offered to Realtime.
    const sessions = proxy.sessions
    const swap = sessions && phoenixSwap(sessions, req, { clientIp: ip, requestId: id, proto, log })
    const headers = outboundRequestHeaders(req.rawHeaders, req.headers, {
      identity: proxy.identityOf(ip, id),
      host: req.headers.host,
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
    up.on('timeout', () => up.destroy(Object.assign(new Error('handshake timed out'), { code: 'ETIMEDOUT_HANDSHAKE' })))
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
      socket.write(`${lines.join('\r\n')}\r\n\r\n`)
      if (upHead.length > 0) socket.write(upHead)
      const toUpstream = swap ?? upSocket
      if (head.length > 0) toUpstream.write(head)
      open.add(socket)
      let received = 0
      let sent = 0
      upSocket.on('data', (c: Buffer) => (received += c.length))
      socket.on('data', (c: Buffer) => (sent += c.length))
      upSocket.pipe(socket)
      if (swap) {
        socket.pipe(swap).pipe(upSocket)
        swap.on('error', () => upSocket.destroy())
      } else socket.pipe(upSocket)
      // Idle, not total: a socket with traffic (the heartbeat at least) lives as long as it is used.
      upSocket.setTimeout(upstream.timeoutMs, () => upSocket.destroy())
      ;(socket as Socket).setTimeout(upstream.timeoutMs, () => socket.destroy())
      upSocket.on('error', () => upSocket.destroy())
      let closed = false
      const close = () => {
        if (closed) return
        closed = true
        open.delete(socket)
        socket.destroy()
        upSocket.destroy()
        log.info(
          {
            route: upstream.row.prefix,
            service: upstream.label,
            status: 101,
            durationMs: Math.round(performance.now() - started),
            bytesIn: sent,
            bytesOut: received,
          },
          'websocket closed',
        )
      }
      socket.on('close', close)
      upSocket.on('close', close)
    })
    up.end()
  })

  // A stopping authgate ends its sockets: the clients reconnect to another instance.
  app.addHook('preClose', (done) => {
    for (const socket of open) socket.destroy()
    done()
  })
}
