/**
 * HTTP Basic client credentials as RFC 6749 §2.3.1 defines them: the client id and secret are each
 * `application/x-www-form-urlencoded` before they are joined with `:` and base64-encoded, so a
 * conforming client (oauth4webapi, for one) sends `-` as `%2D`. Supabase Auth splits the header
 * without decoding and refuses the id ("Invalid client_id format"); authgate decodes both parts and
 * sends the header Supabase Auth reads: `Basic base64(id:secret)` with the raw values
 * (docs/decisions.md, D27). Anything that is not a well-formed Basic header is left for the backend.
 */
export function decodedBasicCredentials(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const m = /^Basic ([A-Za-z0-9+/]+={0,2})$/i.exec(header.trim())
  if (!m) return undefined
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon === -1) return undefined
  const id = formDecode(decoded.slice(0, colon))
  const secret = formDecode(decoded.slice(colon + 1))
  // An id holding `:` (sent as `%3A`) cannot be written into a header that Supabase Auth splits at
  // its first colon: the header is left as sent, and the backend refuses the id it reads.
  if (id === undefined || secret === undefined || id.includes(':')) return undefined
  const raw = `Basic ${Buffer.from(`${id}:${secret}`, 'utf8').toString('base64')}`
  return raw === header.trim() ? undefined : raw
}

/** One form-encoded value (`+` is a space); undefined for a malformed escape. */
function formDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '))
  } catch {
    return undefined
  }
}
