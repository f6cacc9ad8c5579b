import type { FastifyReply, FastifyRequest } from 'fastify'
import { Pool } from 'undici'
import { sendError } from '../errors.ts'
import { clientIp } from './client-ip.ts'
import { inboundResponseHeaders, outboundRequestHeaders } from './headers.ts'

export interface ForwarderOptions {
  backendUrl: URL
  /** Time the backend has to send its response headers. */
  timeoutMs: number
  connections: number
}

export interface ForwardTarget {
  method: string
  /** Backend path relative to the backend base URL, already encoded. */
  path: string
  /** The exact request bytes, or undefined for no body. */
  body: Buffer | undefined
}

// Errors that mean no usable connection to the backend (502); a connect timeout is unreachability too.
const UNREACHABLE = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ETIMEDOUT',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED',
])

/**
 * The one forwarder every proxied route shares: original bytes out, the backend's status, headers
 * and body bytes back. One keep-alive pool to the backend origin.
 */
export class Forwarder {
  readonly #pool: Pool
  readonly #basePath: string
  readonly #timeoutMs: number

  constructor(options: ForwarderOptions) {
    this.#pool = new Pool(options.backendUrl.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 10_000,
      connectTimeout: Math.min(options.timeoutMs, 10_000),
    })
    this.#basePath = options.backendUrl.pathname === '/' ? '' : options.backendUrl.pathname
    this.#timeoutMs = options.timeoutMs
  }

  close(): Promise<void> {
    return this.#pool.close()
  }

  async forward(request: FastifyRequest, reply: FastifyReply, target: ForwardTarget): Promise<void> {
    const url = request.raw.url ?? ''
    const q = url.indexOf('?')
    // The raw query string, never re-encoded (NOTES.md, "Forwarding").
    const path = this.#basePath + target.path + (q === -1 ? '' : url.slice(q))
    const headers = outboundRequestHeaders(request.raw.rawHeaders, request.headers, {
      clientIp: clientIp(request),
      host: request.headers.host,
      proto: request.protocol,
    })

    // A client that goes away cancels its backend request.
    const abort = new AbortController()
    const onClose = () => {
      if (!reply.raw.writableFinished) abort.abort()
    }
    reply.raw.once('close', onClose)

    let response
    try {
      response = await this.#pool.request({
        method: target.method as 'GET',
        path,
        headers,
        body: target.body ?? null,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        responseHeaders: 'raw',
        signal: abort.signal,
      })
    } catch (err) {
      reply.raw.off('close', onClose)
      if (abort.signal.aborted) return
      const code = (err as { code?: string }).code ?? ''
      if (code === 'UND_ERR_HEADERS_TIMEOUT') {
        request.log.warn({ backendPath: target.path }, 'backend did not answer in time')
        sendError(request, reply, 'request_timeout')
        return
      }
      request.log.error({ err: { code, message: (err as Error).message }, backendPath: target.path }, UNREACHABLE.has(code) ? 'backend unreachable' : 'backend request failed')
      // The internal address stays in the log, never in the answer.
      sendError(request, reply, 'backend_unreachable')
      return
    }

    const { names, values } = inboundResponseHeaders(response.headers as unknown as Buffer[])
    // Headers set by the gateway's own hooks (rate-limit headers) join the backend's unless the backend sent the same name.
    const own = reply.getHeaders()
    const flat: string[] = []
    const seen = new Set<string>()
    for (let i = 0; i < names.length; i++) {
      flat.push(names[i]!, values[i]!)
      seen.add(names[i]!.toLowerCase())
    }
    for (const [name, value] of Object.entries(own)) {
      if (value === undefined || seen.has(name.toLowerCase())) continue
      if (Array.isArray(value)) for (const v of value) flat.push(name, String(v))
      else flat.push(name, String(value))
    }

    // Write the backend's answer directly: Fastify would re-case, merge and reorder headers.
    reply.hijack()
    const res = reply.raw
    try {
      res.writeHead(response.statusCode, flat)
    } catch (err) {
      request.log.error({ err }, 'backend sent a header Node.js refuses to relay')
      response.body.destroy()
      res.destroy()
      return
    }
    // Hand-rolled piping: stream.pipeline allocates an AbortController per call and aborts it on
    // success, building a DOMException every time (visible in profiles as ~4% of the hot path).
    const body = response.body
    body.on('data', (chunk: Buffer) => {
      if (!res.write(chunk)) body.pause()
    })
    res.on('drain', () => body.resume())
    body.on('end', () => {
      reply.raw.off('close', onClose)
      res.end()
    })
    body.on('error', (err: Error & { code?: string }) => {
      if (!abort.signal.aborted) request.log.warn({ err: { code: err.code, message: err.message } }, 'relaying the backend body failed')
      res.destroy()
    })
  }
}
