import { BlockList, isIP } from 'node:net'

/**
 * The addresses a client ID metadata document may not be fetched from (docs/decisions.md, D99 and
 * D129): every range of IANA's special-purpose registries that is not globally reachable, and the
 * IPv6 forms that carry an IPv4 address (mapped, translated, compatible, NAT64, 6to4, Teredo), so
 * that no spelling of a private IPv4 address reaches it through IPv6.
 */

const V4 = new BlockList()
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24],
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const)
  V4.addSubnet(net, bits, 'ipv4')

/** IPv6 ranges refused whole (the forms carrying an IPv4 address worth judging are read first). */
const V6 = new BlockList()
for (const [net, bits] of [
  ['::', 96], // unspecified, loopback, and the deprecated IPv4-compatible addresses (::7f00:1)
  ['::ffff:0:0:0', 96], // IPv4-translated (SIIT): ::ffff:0:7f00:1
  ['64:ff9b:1::', 48], // local-use NAT64: the embedded IPv4 address sits where the network puts it
  ['100::', 64], // discard
  ['100:0:0:1::', 64], // dummy prefix
  ['2001::', 32], // Teredo: a tunnel to an IPv4 address, never a document server
  ['2001:2::', 48], // benchmarking
  ['2001:10::', 28], // ORCHID (deprecated)
  ['2001:20::', 28], // ORCHIDv2: identifiers, not locators
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['5f00::', 16], // segment routing identifiers
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8], // multicast
] as const)
  V6.addSubnet(net, bits, 'ipv6')

/** The eight 16-bit groups of an IPv6 address (already checked by `isIP`), undefined if unreadable. */
function groupsOf(address: string): number[] | undefined {
  let text = address
  let tail: number[] = []
  // A trailing dotted IPv4 address is the last two groups.
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(2).map(Number) as [number, number, number, number]
    tail = [(a << 8) | b, (c << 8) | d]
    text = dotted[1]!.endsWith('::') ? dotted[1]! : dotted[1]!.slice(0, -1)
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)))
  const gap = text.indexOf('::')
  let groups: number[]
  if (gap === -1) groups = [...parse(text), ...tail]
  else {
    const head = parse(text.slice(0, gap))
    const rest = [...parse(text.slice(gap + 2)), ...tail]
    groups = [...head, ...Array<number>(8 - head.length - rest.length).fill(0), ...rest]
  }
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined
}

function ipv4(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
}

/**
 * The IPv4 address an IPv6 address stands for where the network reaches that IPv4 address through
 * it: IPv4-mapped (`::ffff:a.b.c.d`), NAT64's well-known prefix (`64:ff9b::a.b.c.d`) and 6to4
 * (`2002:AABB:CCDD::/48`). Such an address is judged as its IPv4 address.
 */
function embeddedIPv4(g: number[]): string | undefined {
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) return ipv4(g[6]!, g[7]!)
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0)
    return ipv4(g[6]!, g[7]!)
  if (g[0] === 0x2002) return ipv4(g[1]!, g[2]!)
  return undefined
}

/** Whether an address is one a document may not come from (anything unreadable is). */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return V4.check(address, 'ipv4')
  // A zone (`fe80::1%eth0`) only scopes link-local addresses.
  if (family !== 6 || address.includes('%')) return true
  const groups = groupsOf(address)
  if (groups === undefined) return true
  const v4 = embeddedIPv4(groups)
  if (v4 !== undefined) return V4.check(v4, 'ipv4')
  return V6.check(address, 'ipv6')
}
