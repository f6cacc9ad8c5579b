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

/** A probe reads this much of an answer's body at most, then closes the connection (undici's `dump`). */
const PROBE_BODY_LIMIT = 128 * 1024

/**
 * One status probe's exchange (readiness's `GET /health`), as undici's dispatch handler: the status
 * once the answer starts, the body read and dropped (past PROBE_BODY_LIMIT, or at the time limit, the
 * exchange is cut and the connection closed), over once the body is. What undici's request API and
 * `body.dump()` do with such a request, without a stream, a signal or a request handler of theirs:
 * objects whose shapes the forwarded requests' path would meet only at each probe, and whose maps a
 * full collection between two probes frees, so that each probe threw away that path's optimised code
 * (docs/decisions.md, D248). One object per client, reused probe after probe, keeps its own shape.
 */
class StatusProbe implements Dispatcher.DispatchHandler {
  busy = false
  #status = 0
  #read = 0
  #expired = false
  #controller: Dispatcher.DispatchController | undefined = undefined
  #timer: NodeJS.Timeout | undefined = undefined
  #resolve: (status: number) => void = noop
  #reject: (err: Error) => void = noop

  run(dispatch: (handler: StatusProbe) => void, timeoutMs: number): Promise<number> {
    this.busy = true
    this.#status = 0
    this.#read = 0
    this.#expired = false
    this.#controller = undefined
    return new Promise<number>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
      this.#timer = setTimeout(this.#timedOut, timeoutMs)
      this.#timer.unref()
      dispatch(this)
    })
  }

  readonly #timedOut = () => {
    this.#timer = undefined
    this.#expired = true
    // A request still waiting for a connection is cut when undici starts it, before it is sent
    // (as the request API does with an aborted signal); the probe ends then.
    this.#controller?.abort(new Error('probe timed out'))
  }

  #end(err?: Error): void {
    if (!this.busy) return
    this.busy = false
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#controller = undefined
    const resolve = this.#resolve
    const reject = this.#reject
    this.#resolve = noop
    this.#reject = noop
    // An answer that started is the probe's result, however its body ends.
    if (this.#status !== 0) resolve(this.#status)
    else reject(err ?? new Error('no answer'))
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#expired) controller.abort(new Error('probe timed out'))
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // An informational answer is not the answer.
    if (statusCode < 200) return
    this.#status = statusCode
    const length = headers['content-length']
    if (length !== undefined && Number(length) > PROBE_BODY_LIMIT) controller.abort(new Error('probe body too large'))
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#read += chunk.length
    if (this.#read > PROBE_BODY_LIMIT) controller.abort(new Error('probe body too large'))
  }

  onResponseEnd(): void {
    this.#end()
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    this.#end(err)
  }
}

function noop(): void {}

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
  /** The status probe's request, kept from one probe to the next (StatusProbe). */
  #probe: { path: string; userAgent: string; options: Dispatcher.DispatchOptions; handler: StatusProbe } | undefined

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
   * The status of `GET path` (`path` carries the base path), for readiness's probe: sent as `fetch`
   * would send it with a `User-Agent` of `userAgent` and no identity, the body read and dropped, the
   * exchange cut after `timeoutMs`. Rejects when no answer started by then.
   */
  status(path: string, userAgent: string, timeoutMs: number): Promise<number> {
    let probe = this.#probe
    if (probe === undefined || probe.path !== path || probe.userAgent !== userAgent) {
      // The headers `fetch` sends for it, in its order: the caller's, the identity, the encoding.
      const headers = ['user-agent', userAgent, ...this.identityHeaders(), 'accept-encoding', READ_ENCODING]
      probe = this.#probe = { path, userAgent, options: { method: 'GET', path, headers }, handler: new StatusProbe() }
    }
    // Probes that overlap (rare: readiness sends one at a time) each get a handler of their own.
    const handler = probe.handler.busy ? new StatusProbe() : probe.handler
    const options = probe.options
    return handler.run((h) => this.#pool.dispatch(options, h), timeoutMs)
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

  close(): Promise<void> {
    return this.#pool.close()
  }
}
