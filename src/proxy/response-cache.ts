import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'

/**
 * A small shared cache for the few backend answers that are the same for everyone: the public
 * settings and the discovery documents (`/.well-known/*`). Supabase Auth marks the discovery
 * documents `Cache-Control: public, max-age=600` and sends nothing on `/settings`; the latter gets
 * the configured default TTL. Conservative on purpose:
 *
 * - only GET requests without `Authorization` are looked up or stored;
 * - the key is the Host, the `apikey` header and the raw request target (path and query exactly as
 *   received), so answers never cross hosts, API keys or query strings;
 * - only 200 answers without `Set-Cookie` are stored; `no-store`, `no-cache` and `private` are
 *   honoured, `s-maxage` wins over `max-age` (this is a shared cache);
 * - `Vary` is honoured: the request headers it names must match the stored ones, `Vary: *` is never
 *   stored;
 * - a bounded number of entries and of body bytes, least recently used dropped first.
 *
 * Request `Cache-Control` is ignored, like most shared caches: otherwise any client could make every
 * one of its requests reach the backend.
 */

export interface CachedResponse {
  status: number
  /** Flat [name, value, ...] as relayed (hop-by-hop headers and `Age` already removed). */
  headers: string[]
  body: Buffer
  /** performance.now() when stored, less the Age the backend reported. */
  bornAt: number
  expiresAt: number
  /** Lower-case header names of the backend's Vary, with the values the storing request had. */
  vary: [name: string, value: string | undefined][]
}

export interface ResponseCacheOptions {
  /** Lifetime of an answer that carries no Cache-Control freshness; 0 stores only what the backend marks. */
  defaultTtlMs: number
  maxEntries?: number
  /** Larger bodies are relayed, never stored. */
  maxBodyBytes?: number
  now?: () => number
}

/** How long a backend answer may be served from the cache, in milliseconds; 0 when it may not be stored. */
export function freshnessMs(status: number, headers: readonly string[], defaultTtlMs: number): number {
  if (status !== 200) return 0
  let cacheControl: string | undefined
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!.toLowerCase()
    if (name === 'set-cookie') return 0
    if (name === 'vary' && headers[i + 1]!.trim() === '*') return 0
    if (name === 'cache-control')
      cacheControl = cacheControl === undefined ? headers[i + 1]! : `${cacheControl},${headers[i + 1]!}`
  }
  if (cacheControl === undefined) return defaultTtlMs
  let maxAge: number | undefined
  let sMaxAge: number | undefined
  for (const part of cacheControl.split(',')) {
    const eq = part.indexOf('=')
    const name = (eq === -1 ? part : part.slice(0, eq)).trim().toLowerCase()
    const value = eq === -1 ? '' : part.slice(eq + 1).trim()
    if (name === 'no-store' || name === 'no-cache' || name === 'private') return 0
    if (name === 'max-age' && /^\d+$/.test(value)) maxAge = Number(value)
    if (name === 's-maxage' && /^\d+$/.test(value)) sMaxAge = Number(value)
  }
  const seconds = sMaxAge ?? maxAge
  return seconds === undefined ? defaultTtlMs : seconds * 1000
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name]
  return Array.isArray(v) ? v.join(', ') : v
}

export class ResponseCache {
  readonly #entries = new Map<string, CachedResponse>()
  readonly #defaultTtlMs: number
  readonly #maxEntries: number
  readonly #maxBodyBytes: number
  readonly #now: () => number

  constructor(options: ResponseCacheOptions) {
    this.#defaultTtlMs = options.defaultTtlMs
    this.#maxEntries = options.maxEntries ?? 256
    this.#maxBodyBytes = options.maxBodyBytes ?? 256 * 1024
    this.#now = options.now ?? (() => performance.now())
  }

  get size(): number {
    return this.#entries.size
  }

  get maxBodyBytes(): number {
    return this.#maxBodyBytes
  }

  /** The cache key of a request, or undefined when the request must always go to the backend. */
  keyFor(request: IncomingMessage): string | undefined {
    if (request.method !== 'GET' || request.headers.authorization !== undefined) return undefined
    return `${request.headers.host ?? ''}\n${headerValue(request.headers, 'apikey') ?? ''}\n${request.url ?? ''}`
  }

  /** A fresh stored answer for this request, or undefined. */
  get(key: string, headers: IncomingHttpHeaders): CachedResponse | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= this.#now()) {
      this.#entries.delete(key)
      return undefined
    }
    for (const [name, value] of entry.vary) if (headerValue(headers, name) !== value) return undefined
    // A Map iterates in insertion order: re-inserting on a hit keeps the least recently used first.
    this.#entries.delete(key)
    this.#entries.set(key, entry)
    return entry
  }

  /** Seconds since the backend produced a stored answer (the `Age` header). */
  ageSeconds(entry: CachedResponse): number {
    return Math.max(0, Math.floor((this.#now() - entry.bornAt) / 1000))
  }

  /**
   * Stores the backend's answer when it may be stored. `headers` are those relayed to the client;
   * `requestHeaders` those of the request that fetched it (for Vary).
   */
  store(key: string, status: number, headers: readonly string[], body: Buffer, requestHeaders: IncomingHttpHeaders) {
    if (body.length > this.#maxBodyBytes) return
    const ttl = freshnessMs(status, headers, this.#defaultTtlMs)
    if (ttl <= 0) return
    const kept: string[] = []
    const vary: [string, string | undefined][] = []
    let age = 0
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i]!
      const lower = name.toLowerCase()
      if (lower === 'age') {
        age = Number(headers[i + 1]) || 0
        continue
      }
      if (lower === 'vary')
        for (const v of headers[i + 1]!.split(',')) {
          const n = v.trim().toLowerCase()
          if (n) vary.push([n, headerValue(requestHeaders, n)])
        }
      kept.push(name, headers[i + 1]!)
    }
    const now = this.#now()
    if (age * 1000 >= ttl) return
    this.#entries.delete(key)
    this.#entries.set(key, {
      status,
      headers: kept,
      body,
      bornAt: now - age * 1000,
      expiresAt: now + ttl - age * 1000,
      vary,
    })
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!)
  }

  clear(): void {
    this.#entries.clear()
  }
}
