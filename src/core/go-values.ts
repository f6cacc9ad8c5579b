/**
 * A query string or a form body as Supabase Auth reads it: Go's `url.ParseQuery` and the first value
 * of a name (`Query().Get`, `FormValue`). Pairs are split on `&` only; a pair holding a `;` or a
 * malformed `%` escape is dropped whole; `+` is a space; more than 10,000 pairs and Go reads none.
 * `URLSearchParams` keeps all of those, so `grant_type=password;&grant_type=password` or
 * `grant_type=%zz&grant_type=password` would give authgate another first value than the backend's
 * (docs/decisions.md, D53).
 */

/** Go's limit on the pairs of one query (net/url's `urlmaxqueryparams` default). */
export const MAX_QUERY_PAIRS = 10_000

/** One component unescaped as Go's `QueryUnescape` does, or undefined where Go fails on it. */
export function queryUnescape(text: string): string | undefined {
  if (!text.includes('%') && !text.includes('+')) return text
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) return undefined
  const spaced = text.replaceAll('+', ' ')
  try {
    return decodeURIComponent(spaced)
  } catch {
    // Escaped bytes that are not UTF-8: Go keeps the bytes; read them as UTF-8 would show them.
    const bytes: number[] = []
    for (let i = 0; i < spaced.length; i++) {
      if (spaced[i] === '%') {
        bytes.push(parseInt(spaced.slice(i + 1, i + 3), 16))
        i += 2
      } else bytes.push(...Buffer.from(spaced[i]!, 'utf8'))
    }
    return Buffer.from(bytes).toString('utf8')
  }
}

// The prototype of the values read: empty and frozen, so a name such as `__proto__` or
// `constructor` is an own value like any other, as with `Object.create(null)`. An object made by
// `Object.create(null)` is a dictionary from the start, and each value stored in one took about a
// microsecond, more than the rest of the reading (one per request, for the query).
const NO_INHERITED: object = Object.freeze(Object.create(null) as object)
const valuesRecord = (): Record<string, string> => Object.create(NO_INHERITED) as Record<string, string>

/** One `&`-separated pair of a query as it came, and its name and value where Go reads it. */
export interface BackendPair {
  /** The pair's bytes, as they came. */
  raw: string
  /** Decoded name and value; absent for a pair Go drops (a `;`, a bad `%` escape, empty). */
  read?: { key: string; value: string }
}

/**
 * Every pair of a query or form body in order, each with what Go reads of it: for code that
 * rewrites a query pair by pair (the bytes of the others kept) and must agree with the backend on
 * which pairs count. Beyond Go's pair limit, none is read.
 */
export function backendPairs(text: string): BackendPair[] {
  if (text === '') return []
  const parts = text.split('&')
  const readable = parts.length <= MAX_QUERY_PAIRS
  return parts.map((raw) => {
    if (!readable || raw === '' || raw.includes(';')) return { raw }
    const eq = raw.indexOf('=')
    const key = queryUnescape(eq === -1 ? raw : raw.slice(0, eq))
    const value = key === undefined ? undefined : queryUnescape(eq === -1 ? '' : raw.slice(eq + 1))
    return value === undefined ? { raw } : { raw, read: { key: key!, value } }
  })
}

/** The first value of each name, as the backend reads them. */
export function backendValues(text: string): Record<string, string> {
  return valuesFrom(text, 0)
}

/**
 * The first value of each name in `text` from `start` on. Read pair by pair where it lies, with no
 * list of the pairs and no copy of the query made first (every routed request reads its query).
 */
function valuesFrom(text: string, start: number): Record<string, string> {
  const out = valuesRecord()
  if (start >= text.length) return out
  let pairs = 1
  for (let i = text.indexOf('&', start); i !== -1; i = text.indexOf('&', i + 1)) pairs++
  if (pairs > MAX_QUERY_PAIRS) return out
  // The next `;` and `=` at or after the pair, each searched for again only once passed: the
  // text is scanned a bounded number of times whatever the number of pairs.
  let semicolon = text.indexOf(';', start)
  let equals = text.indexOf('=', start)
  for (let from = start; from <= text.length;) {
    let end = text.indexOf('&', from)
    if (end === -1) end = text.length
    const at = from
    from = end + 1
    if (end === at) continue
    if (semicolon !== -1 && semicolon < at) semicolon = text.indexOf(';', at)
    if (semicolon !== -1 && semicolon < end) continue
    if (equals !== -1 && equals < at) equals = text.indexOf('=', at)
    const eq = equals !== -1 && equals < end ? equals : -1
    const key = queryUnescape(text.slice(at, eq === -1 ? end : eq))
    if (key === undefined) continue
    const value = queryUnescape(eq === -1 ? '' : text.slice(eq + 1, end))
    if (value === undefined || key in out) continue
    out[key] = value
  }
  return out
}

/** The query of a raw request target, as the backend reads it. */
export function backendQuery(target: string): Record<string, string> {
  const q = target.indexOf('?')
  return q === -1 ? valuesRecord() : valuesFrom(target, q + 1)
}

/**
 * The query of an absolute URL Supabase Auth wrote (a redirect's `Location`), as Go reads it:
 * between the `?` and the fragment.
 */
export function backendUrlQuery(url: string): Record<string, string> {
  const hash = url.indexOf('#')
  const head = hash === -1 ? url : url.slice(0, hash)
  return backendQuery(head)
}
