import { normaliseAddress } from '../core/client-address.ts'
import { ipv6Groups, isIPv4Address } from '../core/ip.ts'

/**
 * The key of a text that is no address (a socket already gone): one fixed bucket, never the text,
 * so that no string a client or a proxy writes becomes a budget of its own.
 */
export const UNREADABLE_CLIENT_KEY = 'unreadable'

/**
 * The part of a client address that names one client for rate limiting, from its normalised form
 * (src/core/client-address.ts: ports, zone ids, quotes and brackets dropped, IPv4-mapped IPv6 as
 * IPv4). IPv4: the address. Other IPv6: the first `prefixLength` bits (default 64), because an ISP
 * hands each subscriber at least a /64 and a client could otherwise take a fresh budget from every
 * address in it (RFC 6177).
 */
export function clientKey(ip: string, prefixLength: number): string {
  // The common case, a plain IPv4 address, is its own key (no copy, no lower-casing, no parsing).
  if (isIPv4Address(ip)) return ip
  const address = normaliseAddress(ip)
  if (address === undefined) return UNREADABLE_CLIENT_KEY
  if (isIPv4Address(address)) return address
  const groups = ipv6Groups(address)
  if (prefixLength >= 128) return groups.map((g) => g.toString(16)).join(':')
  const masked = groups.map((g, i) => {
    const bits = Math.min(16, Math.max(0, prefixLength - i * 16))
    return bits === 0 ? 0 : g & (0xffff << (16 - bits)) & 0xffff
  })
  return `${masked.map((g) => g.toString(16)).join(':')}/${prefixLength}`
}
