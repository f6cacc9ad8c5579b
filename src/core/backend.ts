import { Pool, fetch as undiciFetch, type Dispatcher } from 'undici'
import { AuthgateConfigError } from '../config/env.ts'

/** How authgate reaches Supabase Auth: one set of options for every part that talks to it. */
export interface BackendOptions {
  /**
   * Base URL, which may carry a path (hosted: `https://<ref>.supabase.co/auth/v1`). A trailing slash
   * is dropped, so `/auth/v1/` and `/auth/v1` name the same backend.
   */
  url: URL | string
  /** Hosted Supabase: sent as `apikey` on every request to the backend, replacing a client's. */
  apiKey?: string | undefined
  /** Time the backend has to send its response headers, and most time between two body chunks. */
  timeoutMs: number
  /** Time to open a connection. */
  connectTimeoutMs: number
  /** Most keep-alive connections. */
  connections: number
  /** The header the request id travels in (Supabase Auth logs it with GOTRUE_API_REQUEST_ID_HEADER). */
  requestIdHeader?: string | undefined
  /**
   * The header the client IP travels in: what Supabase Auth limits per IP by
   * (GOTRUE_RATE_LIMIT_HEADER), `sb-forwarded-for` on the hosted platform. Default `x-forwarded-for`.
   */
  clientIpHeader?: string | undefined
}

export interface ResolvedBackendOptions extends BackendOptions {
  url: URL
}

/**
 * Checks a backend base URL and puts it in the one form every caller uses: http(s), no query,
 * fragment or credentials, no trailing slash. `option` names the setting in the error.
 */
export function normaliseBackendUrl(option: string, raw: URL | string): URL {
  let url: URL
  try {
    url = new URL(typeof raw === 'string' ? raw.trim() : raw.href)
  } catch {
    throw new AuthgateConfigError(option, `not a valid URL: ${JSON.stringify(String(raw))}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new AuthgateConfigError(option, `must be http or https, got ${url.protocol}`)
  if (url.search || url.hash) throw new AuthgateConfigError(option, 'must not carry a query or fragment')
  if (url.username || url.password) throw new AuthgateConfigError(option, 'must not carry credentials')
  url.pathname = url.pathname.replace(/\/+$/, '')
  return url
}

/** A fetch-shaped call to the backend, for the parts that want a whole answer (readiness, session check, key set, cookie sessions' refresh and sign-out). */
export type BackendFetch = (
  url: string | URL,
  init?: { method?: string; body?: string; headers?: Record<string, string> | Headers; signal?: AbortSignal },
) => Promise<Response>

/**
 * The one connection to Supabase Auth: its base URL, the `apikey`, the request-id header, timeouts
 * and one keep-alive pool, shared by the forwarder, readiness, the session check and the key set,
 * so that what the README promises of "every backend request" holds for each of them.
 */
export class SupabaseAuthClient {
  readonly url: URL
  /** The base URL's path, '' for none: prepended to every backend path. */
  readonly basePath: string
  readonly options: Readonly<ResolvedBackendOptions>
  readonly #pool: Pool
  /** Header pairs set on every request (the `apikey`), flat as undici takes them. */
  readonly fixedHeaders: readonly string[]
  /** Lower-case names of client headers this client replaces (the request id, the `apikey`, the client-IP header). */
  readonly replacedHeaders: readonly string[]

  constructor(options: BackendOptions) {
    const url = normaliseBackendUrl('backend.url', options.url)
    this.options = { ...options, url }
    this.url = url
    this.basePath = url.pathname === '/' ? '' : url.pathname
    this.#pool = new Pool(url.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 10_000,
      connectTimeout: options.connectTimeoutMs,
    })
    this.fixedHeaders = options.apiKey !== undefined ? ['apikey', options.apiKey] : []
    const ipHeader = options.clientIpHeader?.toLowerCase()
    this.replacedHeaders = [
      ...(options.requestIdHeader !== undefined ? [options.requestIdHeader.toLowerCase()] : []),
      ...(options.apiKey !== undefined ? ['apikey'] : []),
      // A client's own copy of the client-IP header never reaches the backend.
      ...(ipHeader !== undefined && ipHeader !== 'x-forwarded-for' ? [ipHeader] : []),
    ]
  }

  /** The backend URL of a path relative to the base (`/user` → `https://<ref>.supabase.co/auth/v1/user`). */
  resolve(path: string): URL {
    return new URL(this.basePath + path, this.url.origin)
  }

  /** Sends one request through the shared pool (undici's handler API); `path` already carries the base path. */
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.#pool.dispatch(options, handler)
  }

  /**
   * A whole request and answer through the shared pool, with the `apikey` set. `url` must be on
   * the backend's origin (what `resolve` gives).
   */
  readonly fetch: BackendFetch = (url, init = {}) => {
    const headers: Record<string, string> = {}
    new Headers(init.headers).forEach((value, name) => (headers[name] = value))
    if (this.options.apiKey !== undefined) headers.apikey = this.options.apiKey
    return undiciFetch(url, {
      ...(init.method !== undefined ? { method: init.method } : {}),
      ...(init.body !== undefined ? { body: init.body } : {}),
      headers,
      dispatcher: this.#pool,
      // A redirect is the backend's answer to report, never one to follow from here.
      redirect: 'manual',
      ...(init.signal ? { signal: init.signal } : {}),
    }) as unknown as Promise<Response>
  }

  close(): Promise<void> {
    return this.#pool.close()
  }
}
