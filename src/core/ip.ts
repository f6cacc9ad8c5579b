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
