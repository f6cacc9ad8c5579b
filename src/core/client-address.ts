import { isIPv6 } from 'node:net'
import { ipv6Groups, isIPv4Address, mappedIPv4 } from './ip.ts'
import { throttle } from './log-throttle.ts'

/**
 * One client, one address, whatever a proxy wrote: the forms proxies put in `X-Forwarded-For`
 * (and RFC 7239's node syntax) read as the address they carry (docs/decisions.md, D139).
 *
 * - `203.0.113.7` as it is (the common case: no copy);
 * - surrounding whitespace and double quotes dropped (`"203.0.113.7"`, RFC 7239's quoted form);
 * - a port dropped: `203.0.113.7:4711` (Azure Application Gateway), `[2001:db8::1]:4711`, and
 *   RFC 7239's obfuscated port `[2001:db8::1]:_abc`;
 * - an IPv6 zone id dropped (`fe80::1%eth0` names an interface of the proxy, not a host);
 * - IPv4-mapped IPv6 (`::ffff:203.0.113.7`, `::ffff:cb00:7107`) as the IPv4 address;
 * - other IPv6 in its RFC 5952 text (lower case, longest zero run as `::`).
 *
 * Anything else (`unknown`, RFC 7239's `_hidden` names, a host name, `1.2.3.04`) is no address:
 * undefined. Supabase Auth reads the address with Go's `net.ParseIP`, which accepts every result.
 */
export function normaliseAddress(text: string): string | undefined {
  if (isIPv4Address(text)) return text
  let s = text.trim()
  if (s.length >= 2 && s.charCodeAt(0) === 0x22 && s.charCodeAt(s.length - 1) === 0x22) s = s.slice(1, -1).trim()
  if (s.charCodeAt(0) === 0x5b) {
    // [v6] or [v6]:port
    const end = s.indexOf(']')
    if (end === -1 || !isPortSuffix(s, end + 1)) return undefined
    return ipv6Text(s.slice(1, end))
  }
  if (isIPv4Address(s)) return s
  const colon = s.indexOf(':')
  if (colon !== -1 && s.indexOf(':', colon + 1) === -1) {
    // One colon: an IPv4 address and a port (an IPv6 address has at least two).
    const host = s.slice(0, colon)
    return isIPv4Address(host) && isPortSuffix(s, colon) ? host : undefined
  }
  return ipv6Text(s)
}

/** `''`, or `:` and a port from `start`: 1–5 digits, or RFC 7239's obfuscated `_name`. */
function isPortSuffix(s: string, start: number): boolean {
  if (start === s.length) return true
  return /^:(?:\d{1,5}|_[A-Za-z0-9._-]+)$/.test(s.slice(start))
}

function ipv6Text(text: string): string | undefined {
  const zone = text.indexOf('%')
  const address = zone === -1 ? text : text.slice(0, zone)
  if (!isIPv6(address)) return undefined
  const groups = ipv6Groups(address.toLowerCase())
  const v4 = mappedIPv4(groups)
  if (v4 !== undefined) return v4
  // RFC 5952 §4.2: the longest run of two or more zero groups (the first of equals) is `::`.
  let bestStart = -1
  let bestLength = 1
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLength) {
      bestStart = i
      bestLength = j - i
    }
    i = j
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':')
  if (bestStart === -1) return hex(0, 8)
  return `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`
}

/** The client a request comes from, and what was set aside on the way. */
export interface ClientAddress {
  /** The normalised address: the client's, or a trusted proxy's in place of an entry that is no address. */
  ip: string
  /** The forwarded entry that was no address, when there was one (the address is then the proxy's). */
  unreadable?: string
}

/**
 * The client of a request from its chain of addresses as proxy-addr gives it (Fastify's
 * `request.ips`): the socket's address first, then the `X-Forwarded-For` entries from right to
 * left, as far as the trust rule goes; the last is the client. An entry that is still no address
 * after `normaliseAddress` is never used: the nearest address to its right is, that of the trusted
 * proxy that handed it on. That proxy stands for every client it serves until it writes addresses
 * again (one bucket for them all, not one per request), and Supabase Auth gets an address it can parse.
 */
export function clientFromChain(chain: readonly string[]): ClientAddress {
  const last = chain[chain.length - 1]
  // A socket that is gone has no address (Fastify's `request.ip` is then undefined).
  if (last === undefined) return { ip: 'unknown' }
  const ip = normaliseAddress(last)
  if (ip !== undefined) return { ip }
  for (let i = chain.length - 2; i >= 0; i--) {
    const proxy = normaliseAddress(chain[i]!)
    if (proxy !== undefined) return { ip: proxy, unreadable: last }
  }
  return { ip: 'unknown', unreadable: last }
}

/**
 * The chain `clientFromChain` reads, for a request that does not go through Fastify (Realtime's
 * socket handshake): the socket's address, then `X-Forwarded-For` from right to left while the
 * address just added is a trusted proxy's (each entry judged on its normalised form).
 */
export function forwardedChain(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: (address: string) => boolean,
): string[] {
  if (socketAddress === undefined) return []
  const chain = [socketAddress]
  if (!trusted(socketAddress) || forwardedFor === undefined) return chain
  const entries = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',')
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!.trim()
    if (entry === '') continue
    chain.push(entry)
    if (!trusted(entry)) break
  }
  return chain
}

/**
 * The trust rule of AUTHGATE_TRUSTED_PROXIES as a function of an address, in whatever form a proxy
 * wrote it: the normalised address is checked (`203.0.113.7:4711` is the proxy 203.0.113.7). Given
 * to Fastify as `trustProxy`, so that `request.ips`, `request.host` and `request.protocol` follow it.
 */
export function trustRule(isTrusted: (address: string) => boolean): (address: string) => boolean {
  return (address) => {
    const normal = normaliseAddress(address)
    return normal !== undefined && isTrusted(normal)
  }
}

/** Forwarded entries that were no address, counted for `authgate_client_address_unreadable_total` (per process). */
export const unreadableAddresses = { count: 0 }

interface Logger {
  warn(details: object, message: string): void
}
// One line per proxy and minute: a proxy that writes something else writes it for every request.
const unreadableLog = throttle(60_000, { maxKeys: 100 })

/** Counts an entry that was no address and says so, at most once a minute per proxy. */
export function reportUnreadable(log: Logger, address: ClientAddress): void {
  if (address.unreadable === undefined) return
  unreadableAddresses.count++
  const taken = unreadableLog.take(address.ip)
  if (taken.write)
    log.warn(
      { entry: address.unreadable.slice(0, 100), proxy: address.ip, occurrences: taken.occurrences },
      'a trusted proxy forwarded a client address that is no IP address: the proxy’s own address is used for it',
    )
}
