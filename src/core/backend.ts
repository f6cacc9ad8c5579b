import { createRequire } from 'node:module'
import type { Dispatcher, Pool as UndiciPool } from 'undici'
import { AuthgateConfigError } from './config-error.ts'
import { READ_ENCODING, readableBody } from './held-answer.ts'
import { notHttp, schemeHint, withoutCredentials } from './url-message.ts'

// undici's pool and its request API by their modules, not its index: the index loads fetch,
// WebSocket, EventSource, the cache stores and mocks, about 12 MB of resident memory a gateway
// never uses (test/core/backend.test.ts checks these are the classes the index exports).
const requireModule = createRequire(import.meta.url)
export const Pool = requireModule('undici/lib/dispatcher/pool.js') as typeof UndiciPool
export const requestThrough = requireModule('undici/lib/api/api-request.js') as (
  this: Dispatcher,
  options: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>

// undici checks every header name a request is given, on every request: a name in its table of
// well-known names is taken at once; any other is lower-cased, looked up again and matched against
// the token pattern (some 600 instructions a name). The names authgate sends on each backend
// request are its own lower-case tokens, not in that table; added to it as what the table holds for
// a lower-case name (the name itself), undici takes them at once and sends them as before. A name
// that is not a lower-case token is not added, so undici still judges (and refuses) it as before;
// where undici has no such table, or one that cannot be added to, nothing is added.
const undiciNames = (requireModule('undici/lib/core/constants.js') as { headerNameLowerCasedRecord?: unknown })
  .headerNameLowerCasedRecord as Record<string, string | undefined> | undefined
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/

/** Adds lower-case header names authgate sends on every backend request to undici's well-known ones. */
export function knownToUndici(names: readonly string[]): void {
  if (typeof undiciNames !== 'object' || undiciNames === null || !Object.isExtensible(undiciNames)) return
  if (undiciNames['content-type'] !== 'content-type') return
  for (const name of names) if (TOKEN.test(name) && undiciNames[name] === undefined) undiciNames[name] = name
}

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
    const value = withoutCredentials(String(raw).trim())
    throw new AuthgateConfigError(option, `not a valid URL: ${JSON.stringify(value)}${schemeHint(value)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AuthgateConfigError(option, notHttp(String(raw)))
  if (url.search || url.hash) throw new AuthgateConfigError(option, 'must not carry a query or fragment')
  if (url.username || url.password) throw new AuthgateConfigError(option, 'must not carry credentials')
  url.pathname = url.pathname.replace(/\/+$/, '')
  return url
}

/** What the backend's whole answers offer: the part of a fetch `Response` the callers read. */
export interface BackendResponse {
  status: number
  headers: { get(name: string): string | null }
  text(): Promise<string>
  json(): Promise<unknown>
  arrayBuffer(): Promise<ArrayBuffer>
  body: { cancel(): Promise<void> } | null
}

/** On whose behalf authgate sends a backend request: the client's address and the request's id. */
export interface RequestIdentity {
  clientIp?: string | undefined
  requestId?: string | undefined
}

/**
 * A fetch-shaped call to the backend, for the parts that want a whole answer (readiness, session
 * check, key set, cookie sessions' refresh and sign-out, the doctor). `identity` names the client
 * the request is made for; its headers are set as for a forwarded request.
 */
export type BackendFetch = (
  url: string | URL,
  init?: {
    method?: string
    body?: string
    headers?: Record<string, string> | Headers
    signal?: AbortSignal
    identity?: RequestIdentity
  },
) => Promise<BackendResponse>

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
  readonly #pool: UndiciPool
  /** Lower-case names of client headers this client replaces (the request id, the `apikey`, the client-IP header). */
  readonly replacedHeaders: readonly string[]
  /** The configured client-IP header (lower case) when it is not `x-forwarded-for`. */
  readonly #ipHeader: string | undefined
  readonly #idHeader: string | undefined
  /** The `apikey` pair, or none. */
  readonly #fixed: readonly string[]

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
    this.#fixed = options.apiKey !== undefined ? ['apikey', options.apiKey] : []
    const ipHeader = options.clientIpHeader?.toLowerCase()
    this.#ipHeader = ipHeader !== undefined && ipHeader !== 'x-forwarded-for' ? ipHeader : undefined
    this.#idHeader = options.requestIdHeader?.toLowerCase()
    // The identity headers and the forwarded view, on every forwarded request.
    knownToUndici([
      'x-forwarded-for',
      'x-forwarded-host',
      'x-forwarded-proto',
      'apikey',
      ...(this.#ipHeader !== undefined ? [this.#ipHeader] : []),
      ...(this.#idHeader !== undefined ? [this.#idHeader] : []),
    ])
    this.replacedHeaders = [
      ...(this.#idHeader !== undefined ? [this.#idHeader] : []),
      ...(options.apiKey !== undefined ? ['apikey'] : []),
      // A client's own copy of the client-IP header never reaches the backend.
      ...(this.#ipHeader !== undefined ? [this.#ipHeader] : []),
    ]
  }

  /**
   * The identity of one backend request, flat [name, value, ...]: the client IP in
   * `x-forwarded-for` and in the configured client-IP header (what Supabase Auth limits by), the
   * request id in its header, the `apikey`. The one source of these headers for every request to
   * Supabase Auth: forwarded, cookie sessions' refresh, the doctor's probes, the key set.
   */
  identityHeaders(who: RequestIdentity = {}): string[] {
    const ip = who.clientIp
    const id = this.#idHeader !== undefined ? who.requestId : undefined
    // Sized at once (a forwarded request makes one): pushing into an empty list reserved room for
    // seventeen entries.
    const out = new Array<string>(
      (ip === undefined ? 0 : this.#ipHeader === undefined ? 2 : 4) + (id === undefined ? 0 : 2) + this.#fixed.length,
    )
    let n = 0
    if (ip !== undefined) {
      // One value, so Supabase Auth's left-most pick is the IP authgate decided on (D4).
      out[n++] = 'x-forwarded-for'
      out[n++] = ip
      if (this.#ipHeader !== undefined) {
        out[n++] = this.#ipHeader
        out[n++] = ip
      }
    }
    if (id !== undefined) {
      out[n++] = this.#idHeader!
      out[n++] = id
    }
    for (const v of this.#fixed) out[n++] = v
    return out
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
  readonly fetch: BackendFetch = async (url, init = {}) => {
    const target = typeof url === 'string' ? new URL(url) : url
    const headers: Record<string, string> = {}
    // A plain object or a Headers (jose passes one); read without touching the global Headers,
    // which would load Node.js's own copy of undici.
    const given = init.headers as { forEach?: (f: (value: string, name: string) => void) => void } | undefined
    if (typeof given?.forEach === 'function') given.forEach((value, name) => (headers[name.toLowerCase()] = value))
    else if (given) for (const [name, value] of Object.entries(given)) headers[name.toLowerCase()] = String(value)
    const identity = this.identityHeaders(init.identity)
    for (let i = 0; i < identity.length; i += 2) headers[identity[i]!] = identity[i + 1]!
    // authgate reads these answers itself: asked for uncompressed, decoded if compressed anyway.
    headers['accept-encoding'] ??= READ_ENCODING
    // A redirect is the backend's answer to report, never one to follow from here (undici's
    // request does not follow them).
    const answer = await requestThrough.call(this.#pool, {
      method: init.method ?? 'GET',
      path: target.pathname + target.search,
      ...(init.body !== undefined ? { body: init.body } : {}),
      headers,
      ...(init.signal ? { signal: init.signal } : {}),
    })
    const body = answer.body
    const raw = answer.headers
    const encoding = raw['content-encoding']
    const bytes = async () =>
      readableBody(Array.isArray(encoding) ? encoding.join(', ') : encoding, Buffer.from(await body.arrayBuffer()))
    return {
      status: answer.statusCode,
      headers: {
        get: (name) => {
          const value = raw[name.toLowerCase()]
          return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
        },
      },
      text: async () => (await bytes()).toString('utf8'),
      json: async () => JSON.parse((await bytes()).toString('utf8')) as unknown,
      arrayBuffer: async () => {
        const b = await bytes()
        return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer
      },
      body: { cancel: () => body.dump().then(() => undefined) },
    }
  }

  /**
   * The status of a GET whose answer is not read (readiness's probe), or undefined when none came:
   * the request `fetch` sends, through the handler API with the options the forwarders dispatch,
   * so that a probe's objects are of the shapes undici's functions see on every forwarded request
   * (docs/decisions.md, D244). `path` already carries the base path.
   */
  status(path: string, given: Readonly<Record<string, string>>, timeoutMs: number): Promise<number | undefined> {
    // The names and their order of `fetch`'s headers: the given ones, the identity, the encoding.
    const headers: string[] = []
    let encoding = false
    for (const [name, value] of Object.entries(given)) {
      const lower = name.toLowerCase()
      headers.push(lower, value)
      encoding ||= lower === 'accept-encoding'
    }
    headers.push(...this.identityHeaders())
    if (!encoding) headers.push('accept-encoding', READ_ENCODING)
    return new Promise((resolve) => {
      this.#pool.dispatch(
        { method: 'GET', path, headers, body: null, headersTimeout: timeoutMs, bodyTimeout: timeoutMs },
        new StatusProbe(timeoutMs, resolve),
      )
    })
  }

  close(): Promise<void> {
    return this.#pool.close()
  }
}

/** Past this many bytes a probe's answer is cut, as undici's `dump()` cuts the body it drops. */
const DUMP_LIMIT = 128 * 1024

/**
 * One status probe's handler: what `fetch` then `body.cancel()` gave, without their objects. The
 * status once the head came (whatever the body then does: `dump()` ignores its errors), none when no
 * head came before an error or the timeout; the body dropped, the connection cut past `DUMP_LIMIT`.
 * The timeout is the whole exchange's, as `AbortSignal.timeout` on `fetch` was: one that falls before
 * undici started the request aborts it once it does.
 */
class StatusProbe implements Dispatcher.DispatchHandler {
  #status: number | undefined = undefined
  #read = 0
  #controller: Dispatcher.DispatchController | undefined = undefined
  #timedOut = false
  readonly #timer: NodeJS.Timeout
  readonly #done: (status: number | undefined) => void

  constructor(timeoutMs: number, done: (status: number | undefined) => void) {
    this.#done = done
    // Unreferenced, as `AbortSignal.timeout`'s timer is: a probe never holds the process open.
    this.#timer = setTimeout(() => {
      this.#timedOut = true
      this.#controller?.abort(new Error('readiness probe timed out'))
    }, timeoutMs).unref()
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#timedOut) controller.abort(new Error('readiness probe timed out'))
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // An informational head (1xx) is not the answer: `fetch` waits past it for the final one.
    if (statusCode < 200) return
    this.#status = statusCode
    const length = headers['content-length']
    if (typeof length === 'string' && Number.parseInt(length, 10) > DUMP_LIMIT) controller.abort(new Error('too long'))
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#read += chunk.length
    if (this.#read > DUMP_LIMIT) controller.abort(new Error('too long'))
  }

  onResponseEnd(): void {
    this.#end()
  }

  onResponseError(): void {
    this.#end()
  }

  #end(): void {
    clearTimeout(this.#timer)
    this.#done(this.#status)
  }
}
