import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import { withoutCookie } from '../core/cookie-pairs.ts'

/**
 * Header hygiene, one list and one function per direction (the shape of Go's net/http/httputil
 * ReverseProxy). Names are lower case.
 */

/** RFC 9110 §7.6.1 connection-specific headers, plus the de-facto ones Go's proxy also drops. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive', // RFC 2068 §19.7.1
  'proxy-connection', // non-standard, sent by old clients
  'proxy-authenticate', // meant for the proxy, RFC 9110 §11.7.1
  'proxy-authorization', // meant for the proxy, RFC 9110 §11.7.2
  'te', // RFC 9110 §10.1.4
  'trailer', // RFC 9110 §6.6.2
  'transfer-encoding', // RFC 9112 §6.1: re-framed per hop
  'upgrade', // RFC 9110 §7.8: no protocol switching through the gateway
])

/**
 * Headers that carry a client's address from a gateway or CDN to what is behind it. The client
 * address is authgate's alone (docs/decisions.md, D4, D140): none of these is passed on from
 * anyone, a trusted proxy included (a proxy hands on its client's own copies of the ones it does not
 * set itself), and Supabase Auth gets the one address authgate derived, in `X-Forwarded-For` and the
 * configured AUTHGATE_CLIENT_IP_HEADER. The operator's GOTRUE_RATE_LIMIT_HEADER names one of these
 * or that header, so a client cannot choose the key Supabase Auth limits by.
 */
export const CLIENT_ADDRESS_HEADERS = [
  'x-forwarded-for', // the de-facto standard: authgate reads it (through trusted proxies) and sets it
  'forwarded', // RFC 7239
  'x-real-ip', // nginx
  'true-client-ip', // Akamai, Cloudflare Enterprise
  'cf-connecting-ip', // Cloudflare
  'cf-connecting-ipv6', // Cloudflare (pseudo-IPv4)
  'x-client-ip', // Apache httpd, many frameworks' fallback
  'fly-client-ip', // Fly.io
  'fastly-client-ip', // Fastly
  'x-cluster-client-ip', // Rackspace, Riverbed
  'x-original-forwarded-for', // ingress-nginx (the X-Forwarded-For it received)
  'x-proxyuser-ip', // Google services
  'client-ip', // old proxies
  'x-envoy-external-address', // Envoy
  'x-azure-clientip', // Azure Front Door
  'x-azure-socketip', // Azure Front Door
  'x-appengine-user-ip', // Google App Engine
  'do-connecting-ip', // DigitalOcean App Platform
  'x-forwarded', // pre-RFC 7239 `X-Forwarded: for=…`
  'forwarded-for', // pre-RFC 7239
  'sb-forwarded-for', // Supabase's own: Supabase Auth prefers it over everything (authgate sets it when configured)
  'x-originating-ip', // Microsoft Exchange and mail gateways
  'x-remote-addr', // PHP and CGI-era proxies
  'x-remote-ip', // likewise
  'x-vercel-forwarded-for', // Vercel
  'cf-pseudo-ipv4', // Cloudflare (pseudo-IPv4)
]

/**
 * Whether a client header spelled with `_` or `.` for `-` (`X_Real_IP`, `X.Real.IP`) names one
 * authgate strips: CGI, WSGI and Rack read `X_Real_IP` and `X-Real-IP` as the same
 * `HTTP_X_REAL_IP`, so an upstream of that kind would take the client's copy for the proxy's.
 */
function strippedSpelling(lower: string): boolean {
  if (!lower.includes('_') && !lower.includes('.')) return false
  return STRIPPED_REQUEST.has(lower.replace(/[_.]/g, '-'))
}

/**
 * Request headers the gateway replaces or removes besides hop-by-hop ones:
 * - host, content-length: set for the backend connection and the exact body sent;
 * - expect: the gateway has already read the body (undici also refuses it);
 * - every client-address header (CLIENT_ADDRESS_HEADERS): authgate sends its own;
 * - x-forwarded-host, -proto, -port: set by authgate from its own view or a trusted proxy's (D4);
 * - x-jwt-aud: changes the audience Supabase Auth resolves users in (it is read from the request by Supabase Auth).
 */
export const STRIPPED_REQUEST = new Set([
  'host',
  'content-length',
  'expect',
  ...CLIENT_ADDRESS_HEADERS,
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-jwt-aud',
])

/** The last entry of a header a proxy may have appended to (`a, b` → `b`), as Fastify reads it. */
function lastEntry(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.at(-1) : value
  if (text === undefined || text === '') return undefined
  return text.slice(text.lastIndexOf(',') + 1).trim()
}

/**
 * The host and scheme a request was addressed to, for `X-Forwarded-Host` and `X-Forwarded-Proto`
 * upstream, by Fastify's rule for `request.host` and `request.protocol` (trustProxy): a trusted
 * proxy's `X-Forwarded-Host`/`-Proto` (its last entry) when it sent one, else authgate's own view
 * (the `Host` header, the socket's TLS). For a request that does not go through Fastify (a socket
 * handshake); a Fastify route reads `request.host` and `request.protocol`.
 */
export function forwardedView(
  req: IncomingMessage,
  trusted: ((address: string) => boolean) | undefined,
): { host: string | undefined; proto: string } {
  const address = req.socket.remoteAddress
  const viaProxy = trusted !== undefined && address !== undefined && trusted(address)
  const own = 'encrypted' in req.socket && req.socket.encrypted === true ? 'https' : 'http'
  if (!viaProxy) return { host: req.headers.host, proto: own }
  return {
    host: lastEntry(req.headers['x-forwarded-host']) ?? req.headers.host,
    proto: lastEntry(req.headers['x-forwarded-proto']) ?? own,
  }
}

/** Whether `text` is `lower` in any ASCII case, with no string made for the comparison. */
function equalsLower(text: string, lower: string): boolean {
  if (text.length !== lower.length) return false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if ((c >= 0x41 && c <= 0x5a ? c + 0x20 : c) !== lower.charCodeAt(i)) return false
  }
  return true
}

/** Names listed in a Connection header are hop-by-hop for this message (RFC 9110 §7.6.1). */
function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined
  // `keep-alive`, what nearly every client sends, names only a header that is dropped anyway: no
  // set and no split list for it on every request.
  if (typeof value === 'string' && equalsLower(value, 'keep-alive')) return undefined
  const list = Array.isArray(value) ? value.join(',') : value
  const out = new Set<string>()
  for (const t of list.split(',')) {
    const name = t.trim().toLowerCase()
    if (name) out.add(name)
  }
  return out
}

export interface ForwardedIdentity {
  /**
   * The backend identity of the request, flat [name, value, ...]: client IP, request id, `apikey`
   * (`SupabaseAuthClient.identityHeaders`).
   */
  identity: readonly string[]
  host?: string | undefined
  proto?: string | undefined
  /** Headers the gateway sets itself (request id, a configured apikey): the client's are dropped. */
  replaced?: readonly string[] | undefined
  /** Headers a route sets in place of the client's, as a flat [name, value, ...] list appended last. */
  set?: readonly string[] | undefined
  /**
   * authgate's own cookies (the session cookie, the device cookie of the per-account limit): they
   * are credentials for authgate, so they are taken out of the `Cookie` header sent to Supabase
   * Auth; the client's other cookies go as they came.
   */
  ownCookies?: readonly string[] | undefined
}

/**
 * The headers sent to the backend, from the raw header list (duplicates and order kept; undici
 * accepts a flat [name, value, ...] array).
 */
export function outboundRequestHeaders(
  rawHeaders: string[],
  headers: IncomingHttpHeaders,
  id: ForwardedIdentity,
): string[] {
  const named = connectionTokens(headers.connection)
  const replaced = id.replaced
  // Sized once for the most it can hold (and trimmed at the end), where pushing one by one grew
  // the list's storage several times a request.
  const set = id.set
  const out = new Array<string>(rawHeaders.length + id.identity.length + 4 + (set === undefined ? 0 : set.length))
  let n = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    const seen = requestName(name)
    if (seen.dropped) continue
    const lower = seen.lower
    if (named?.has(lower)) continue
    if (replaced !== undefined && replaced.includes(lower)) continue
    if (lower === 'cookie' && id.ownCookies !== undefined && id.ownCookies.length > 0) {
      let rest: string | undefined = rawHeaders[i + 1]!
      for (const own of id.ownCookies) if (rest !== undefined) rest = withoutCookie(rest, own)
      if (rest !== undefined) {
        out[n++] = name
        out[n++] = rest
      }
      continue
    }
    out[n++] = name
    out[n++] = rawHeaders[i + 1]!
  }
  // The client's own copies of these are dropped above (STRIPPED_REQUEST and `replaced`).
  for (const v of id.identity) out[n++] = v
  if (id.host) {
    out[n++] = 'x-forwarded-host'
    out[n++] = id.host
  }
  if (id.proto) {
    out[n++] = 'x-forwarded-proto'
    out[n++] = id.proto
  }
  if (set !== undefined) for (const v of set) out[n++] = v
  out.length = n
  return out
}

// The request header names met so far, each lower-cased and judged once: clients spell the same
// few names (`Host`, `User-Agent`, `Accept`) on every request, and lower-casing one with capitals
// makes a new string each time. Whether a name is dropped whatever the request (hop-by-hop, one
// authgate replaces, a stripped one's other spelling) is kept with it: one lookup a header rather
// than four. Bounded, so a client inventing names costs a judgement per name, as before.
interface RequestName {
  lower: string
  dropped: boolean
}
const REQUEST_NAMES_LIMIT = 256
const requestNames = new Map<string, RequestName>()

function requestName(name: string): RequestName {
  let seen = requestNames.get(name)
  if (seen !== undefined) return seen
  const lower = name.toLowerCase()
  seen = { lower, dropped: HOP_BY_HOP.has(lower) || STRIPPED_REQUEST.has(lower) || strippedSpelling(lower) }
  if (requestNames.size < REQUEST_NAMES_LIMIT) requestNames.set(name, seen)
  return seen
}

// The response header names met so far, each decoded and lower-cased once: a backend sends the same
// dozen names on every answer, and decoding each name of each answer (a call into C++ per name)
// and lower-casing it cost more than all the rest of the relay's reading of the head. Kept by
// length; bounded, so a backend inventing names costs a decoding per name, as before.
interface KnownName {
  name: string
  lower: string
  /** The name's bytes (a copy: undici's are views of its read buffer). */
  bytes: Buffer
  hopByHop: boolean
  // The value this name came with last, decoded, and its bytes: a backend sends most values (its
  // content type, `Vary`, `Date` within a second, an answer's length) again and again, and
  // comparing the bytes with the last value's costs a fraction of decoding them (a call into C++
  // per value). Bytes against bytes: against the string's characters it cost twice as much.
  last: string
  lastBytes: Buffer
}
const KNOWN_NAMES_LIMIT = 256
const LAST_VALUE_LIMIT = 64
const NO_BYTES = Buffer.alloc(0)
const knownNames: (KnownName[] | undefined)[] = []
let knownNameCount = 0

function sameBytes(a: Buffer, b: Buffer): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

function headerName(raw: Buffer): KnownName {
  const sameLength = knownNames[raw.length]
  if (sameLength !== undefined) for (const known of sameLength) if (sameBytes(raw, known.bytes)) return known
  const name = raw.toString('latin1')
  const lower = name.toLowerCase()
  const known = { name, lower, bytes: Buffer.from(raw), hopByHop: HOP_BY_HOP.has(lower), last: '', lastBytes: NO_BYTES }
  if (knownNameCount < KNOWN_NAMES_LIMIT) {
    knownNameCount++
    if (sameLength === undefined) knownNames[raw.length] = [known]
    else sameLength.push(known)
  }
  return known
}

/**
 * A header's value, decoded as latin1: the name's last value when the bytes are the same, a new
 * decoding otherwise (kept as the name's last).
 */
function headerValue(known: KnownName, raw: Buffer): string {
  if (sameBytes(raw, known.lastBytes)) return known.last
  const value = raw.toString('latin1')
  // Long values (a redirect's `Location`, a cookie) are seldom sent twice, and comparing them
  // with one that differs near its end would cost most of a decoding: only short ones are kept.
  if (value.length <= LAST_VALUE_LIMIT) {
    known.last = value
    known.lastBytes = Buffer.from(raw)
  }
  return value
}

/**
 * The response headers relayed to the client as a flat [name, value, ...] list (what
 * `res.writeHead` takes), from undici's raw list: order and duplicates kept, so every Set-Cookie
 * stays its own line.
 */
export function inboundResponseHeaders(raw: Buffer[]): string[] {
  const out: string[] = []
  let connection: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const known = headerName(raw[i]!)
    const lower = known.lower
    if (lower === 'connection') {
      const value = headerValue(known, raw[i + 1]!)
      connection = connection === undefined ? value : `${connection},${value}`
    }
    if (known.hopByHop) continue
    out.push(known.name, headerValue(known, raw[i + 1]!))
  }
  // Names the Connection header lists are hop-by-hop for this answer too; `keep-alive`, what nearly
  // every answer says, names none that is not dropped already.
  if (connection === undefined || connection === 'keep-alive') return out
  const named = connectionTokens(connection)!
  const relayed: string[] = []
  for (let i = 0; i < out.length; i += 2) if (!named.has(out[i]!.toLowerCase())) relayed.push(out[i]!, out[i + 1]!)
  return relayed
}
