/**
 * `::ffff:203.0.113.7` → `203.0.113.7`: what a dual-stack socket reports for an IPv4 client, so
 * that one client is one address for rate limits, trusted-proxy checks and Supabase Auth.
 * Any other address is returned as it is.
 */
export function unmapIPv4(address: string): string {
  // The first character rules out a plain IPv4 address without copying or lower-casing anything.
  if (
    address.length > 7 &&
    address.charCodeAt(0) === 0x3a &&
    address.slice(0, 7).toLowerCase() === '::ffff:' &&
    isIPv4Address(address.slice(7))
  )
    return address.slice(7)
  return address
}

/**
 * `net.isIPv4`, answered by reading the characters: four decimal parts of 0–255 without leading
 * zeros, separated by dots. node:net tests a regular expression, which was a measurable part of
 * what each refusal of a rate-limited client costs (the client key checks every address).
 */
export function isIPv4Address(text: string): boolean {
  const length = text.length
  if (length < 7 || length > 15) return false
  let parts = 0
  let i = 0
  while (i < length) {
    // One part: 1–3 digits, no leading zero unless the part is 0, at most 255.
    const start = i
    let value = 0
    while (i < length) {
      const c = text.charCodeAt(i)
      if (c < 0x30 || c > 0x39) break
      value = value * 10 + (c - 0x30)
      i++
    }
    const digits = i - start
    if (digits === 0 || digits > 3 || value > 255 || (digits > 1 && text.charCodeAt(start) === 0x30)) return false
    parts++
    if (i === length) break
    if (text.charCodeAt(i) !== 0x2e || parts === 4) return false
    i++
    if (i === length) return false
  }
  return parts === 4
}

/**
 * The eight 16-bit groups of a valid IPv6 address (`::` and an embedded IPv4 tail resolved). The
 * caller has checked the text with `net.isIPv6` and taken off any zone id.
 */
export function ipv6Groups(address: string): number[] {
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

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:0:0/96`) stands for, from its groups; else undefined. */
export function mappedIPv4(groups: readonly number[]): string | undefined {
  if (!groups.slice(0, 5).every((g) => g === 0) || groups[5] !== 0xffff) return undefined
  return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`
}
