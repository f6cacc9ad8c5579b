/**
 * Whether a raw header list (`[name, value, ...]`) carries the header `name` (lower case) more than
 * once, in any case of its name: Node.js keeps the first of some repeated headers and joins others,
 * while another hop may read the last or the whole list.
 */
export function repeatsHeader(rawHeaders: readonly string[], name: string): boolean {
  let seen = false
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const each = rawHeaders[i]!
    // Length first: one comparison for nearly every other name; then character by character,
    // where lower-casing a name spelled with capitals (`Host`) made a new string on every request.
    if (each.length !== name.length || !equalsLower(each, name)) continue
    if (seen) return true
    seen = true
  }
  return false
}

/** Whether `text` is `lower` (a lower-case name) in any ASCII case. */
function equalsLower(text: string, lower: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if ((c >= 0x41 && c <= 0x5a ? c + 0x20 : c) !== lower.charCodeAt(i)) return false
  }
  return true
}
