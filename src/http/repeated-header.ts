/**
 * Whether a raw header list (`[name, value, ...]`) carries the header `name` (lower case) more than
 * once, in any case of its name: Node.js keeps the first of some repeated headers and joins others,
 * while another hop may read the last or the whole list.
 */
export function repeatsHeader(rawHeaders: readonly string[], name: string): boolean {
  let seen = false
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const each = rawHeaders[i]!
    // Length first: one comparison for nearly every other name.
    if (each.length !== name.length || each.toLowerCase() !== name) continue
    if (seen) return true
    seen = true
  }
  return false
}
