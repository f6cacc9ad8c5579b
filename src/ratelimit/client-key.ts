import { isIPv6 } from 'node:net'
import { isIPv4Address, unmapIPv4 } from '../core/ip.ts'

/**
 * The part of a client address that names one client for rate limiting.
 * IPv4: the address. IPv4-mapped IPv6 (`::ffff:203.0.113.7`, what a dual-stack socket reports):
 * the IPv4 address, so one client has one bucket whichever way it connected. Other IPv6: the
 * first `prefixLength` bits (default 64), because an ISP hands each subscriber at least a /64 and a
 * client could otherwise take a fresh budget from every address in it (RFC 6177).
 */
export function clientKey(ip: string, prefixLength: number): string {
  // The common case, a plain IPv4 address, is its own key (no copy, no lower-casing, no parsing).
  if (isIPv4Address(ip)) return ip
  const address = unmapIPv4(ip.split('%')[0]!.toLowerCase()) // zone ids (fe80::1%eth0) name an interface, not a host
  if (isIPv4Address(address)) return address
  if (!isIPv6(address)) return address
  const groups = expandIPv6(address)
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`
  }
  if (prefixLength >= 128) return groups.map((g) => g.toString(16)).join(':')
  const masked = groups.map((g, i) => {
    const bits = Math.min(16, Math.max(0, prefixLength - i * 16))
    return bits === 0 ? 0 : g & (0xffff << (16 - bits)) & 0xffff
  })
  return `${masked.map((g) => g.toString(16)).join(':')}/${prefixLength}`
}

/** Eight 16-bit groups of a valid IPv6 address (with `::` and an embedded IPv4 tail resolved). */
function expandIPv6(address: string): number[] {
  let text = address
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    text = text.slice(0, v4.index) + ((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16)
  }
  const [head = '', tail] = text.split('::')
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)))
  const left = parse(head)
  const right = tail === undefined ? [] : parse(tail)
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
}
