import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { isIP } from 'node:net'
import { createRequire } from 'node:module'
import type { Agent as UndiciAgent, Dispatcher } from 'undici'
import { requestThrough } from '../../core/backend.ts'
import { isPrivateAddress } from './private-address.ts'

// undici's agent by its module, not its index, as the backend client takes its pool: the index
// loads fetch, WebSocket and the mocks, resident memory a gateway never uses.
const Agent = createRequire(import.meta.url)('undici/lib/dispatcher/agent.js') as typeof UndiciAgent

/**
 * Fetching a client ID metadata document without letting a client point authgate at what only
 * authgate can reach: https only, no redirects, every address the name resolves to checked when
 * the connection is made (not before, so a second answer of the name server cannot differ), a
 * size and a time limit. The freshness of the answer (Cache-Control, Expires) is what the caller
 * caches it for.
 */

export interface DocumentFetchOptions {
  /** Largest document read (bytes). */
  maxBytes: number
  /** Longest the whole fetch may take (ms). */
  timeoutMs: number
  /**
   * Origins whose names may resolve to private or loopback addresses (a document server inside
   * the network; the test suite's own server). Empty in production.
   */
  privateOrigins: readonly string[]
  /** PEM of CA certificates trusted besides Node.js's own (a test's or an internal CA). */
  ca?: string | undefined
}

/** A fetched document: its parsed JSON and how long it is fresh (ms, 0: not to be reused; undefined: unsaid). */
export interface FetchedDocument {
  body: unknown
  freshMs: number | undefined
}

/** A fetch that failed for a reason the client's URL or server is responsible for. */
export class DocumentFetchError extends Error {}

/** How long an answer is fresh by its headers (RFC 9111 §4.2.1), undefined when it does not say. */
export function freshnessOf(headers: Record<string, string | string[] | undefined>, now: number): number | undefined {
  const cc = String(headers['cache-control'] ?? '').toLowerCase()
  if (/(^|[\s,])(no-store|no-cache)([\s,=]|$)/.test(cc)) return 0
  const maxAge = /(?:^|[\s,])max-age\s*=\s*"?(\d+)/.exec(cc)
  if (maxAge) return Number(maxAge[1]) * 1000
  const expires = headers.expires
  if (typeof expires === 'string') {
    const at = Date.parse(expires)
    if (Number.isNaN(at)) return 0
    const date = typeof headers.date === 'string' ? Date.parse(headers.date) : Number.NaN
    return Math.max(0, at - (Number.isNaN(date) ? now : date))
  }
  return undefined
}

export class DocumentFetcher {
  readonly #options: DocumentFetchOptions
  readonly #agent: UndiciAgent

  constructor(options: DocumentFetchOptions) {
    this.#options = options
    const lookup = (
      hostname: string,
      opts: { family?: number },
      callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
    ) => {
      dnsLookup(hostname, { all: true, family: opts.family ?? 0 }, (err, addresses) => {
        if (err) return callback(err, [])
        // Every address, since the connection may try them in turn (happy eyeballs).
        const refused = addresses.find((a) => isPrivateAddress(a.address))
        if (refused !== undefined && !this.#privateAllowed(hostname))
          return callback(new DocumentFetchError(`${hostname} resolves to ${refused.address}, a private address`), [])
        const all = (opts as { all?: boolean }).all === true
        if (all) return callback(null, addresses)
        return callback(null, addresses[0]!.address, addresses[0]!.family)
      })
    }
    this.#agent = new Agent({
      connect: { lookup: lookup as never, ...(options.ca ? { ca: options.ca } : {}), timeout: options.timeoutMs },
      connections: 8,
    })
  }

  #privateAllowed(hostname: string): boolean {
    return this.#options.privateOrigins.some((o) => new URL(o).hostname === hostname)
  }

  /** The document at `url` (already checked to be a client ID URL), or a DocumentFetchError. */
  async fetch(url: string, now = Date.now()): Promise<FetchedDocument> {
    const target = new URL(url)
    const hostname = target.hostname.replace(/^\[|\]$/g, '')
    // An address in the URL is not looked up: it is judged here.
    if (isIP(hostname) !== 0 && isPrivateAddress(hostname) && !this.#options.privateOrigins.includes(target.origin))
      throw new DocumentFetchError(`${hostname} is a private address`)
    let answer: Dispatcher.ResponseData
    try {
      answer = await requestThrough.call(this.#agent, {
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: 'GET',
        headers: { accept: 'application/json' },
        // undici follows no redirect unless told: a 3xx is refused below, as the draft asks.
        headersTimeout: this.#options.timeoutMs,
        bodyTimeout: this.#options.timeoutMs,
      })
    } catch (err) {
      const cause = err instanceof DocumentFetchError ? err : (err as Error).cause
      if (cause instanceof DocumentFetchError) throw cause
      throw new DocumentFetchError(`the document could not be fetched: ${(err as Error).message}`)
    }
    try {
      if (answer.statusCode !== 200)
        throw new DocumentFetchError(`the document's server answered ${answer.statusCode}, not 200`)
      const type = String(answer.headers['content-type'] ?? '')
      if (!/^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(type))
        throw new DocumentFetchError(`the document is ${JSON.stringify(type)}, not JSON`)
      const declared = Number(answer.headers['content-length'])
      if (declared > this.#options.maxBytes)
        throw new DocumentFetchError(`the document is larger than ${this.#options.maxBytes} bytes`)
      const chunks: Buffer[] = []
      let size = 0
      // A whole-fetch deadline besides undici's per-read timeouts: a server dripping bytes is cut off.
      const deadline = Date.now() + this.#options.timeoutMs
      for await (const chunk of answer.body as AsyncIterable<Buffer>) {
        if (Date.now() > deadline)
          throw new DocumentFetchError(`the document took longer than ${this.#options.timeoutMs} ms`)
        size += chunk.length
        if (size > this.#options.maxBytes)
          throw new DocumentFetchError(`the document is larger than ${this.#options.maxBytes} bytes`)
        chunks.push(chunk)
      }
      let body: unknown
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        throw new DocumentFetchError('the document is not valid JSON')
      }
      const freshMs = freshnessOf(answer.headers as Record<string, string | string[] | undefined>, now)
      return { body, freshMs }
    } catch (err) {
      // undici reports an unread body's end as an error event: heard here, not thrown at the process.
      answer.body.on('error', () => undefined).destroy()
      if (err instanceof DocumentFetchError) throw err
      throw new DocumentFetchError(`the document could not be read: ${(err as Error).message}`)
    }
  }

  close(): Promise<void> {
    return this.#agent.close()
  }
}
