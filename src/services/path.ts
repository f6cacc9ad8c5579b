import type { ServiceRow } from './table.ts'

/**
 * The one reading of a service path that authgate decides on (docs/decisions.md, D127): the path as
 * the services' routers read it. Phoenix (Realtime) splits the path on `/`, drops empty segments and
 * percent-decodes each segment; PostgREST, Storage and the functions runtime read their paths the
 * same way or more strictly. So `/api//tenants`, `/api/%74enants` and `/api/tenants/` all read as
 * `api, tenants`, and a decision made on the bytes would be made on another path than the one
 * served. What is forwarded stays the client's bytes; only the decisions read this form.
 *
 * Refused outright, since an upstream (or a proxy between) could read them as leaving the service:
 * a segment that is `.` or `..` once decoded, around an encoded `/` or `\` too (`a%2f..%2fb`); a
 * segment that still holds an escaped `.`, `/` or `\` after decoding (`%252e%252e`: harmless behind
 * one decoding layer, an escape behind two; Supabase's Envoy and Kong refuse such paths too); and a
 * segment that is not valid percent-encoded UTF-8, which no upstream would read as authgate does.
 */
export type NormalPath = { ok: true; segments: string[] } | { ok: false; message: string }

const ESCAPED_SEPARATOR = /%(2e|2f|5c)/i
const SUSPECT = /[%.\\]/

/** A decoded segment's escapes, decoded again while they can be: none may turn into `.`, `/`, `\`. */
function escapesSeparator(decoded: string): boolean {
  let text = decoded
  for (let round = 0; round < 4 && text.includes('%'); round++) {
    if (ESCAPED_SEPARATOR.test(text)) return true
    let next: string
    try {
      next = decodeURIComponent(text)
    } catch {
      return false
    }
    if (next === text) return false
    text = next
  }
  return false
}

/** The normal form of a path (no query), or why it is refused. */
export function normalPath(path: string): NormalPath {
  const segments: string[] = []
  for (const raw of path.split('/')) {
    if (raw === '') continue
    let segment = raw
    if (raw.includes('%')) {
      try {
        segment = decodeURIComponent(raw)
      } catch {
        return { ok: false, message: 'The path is not valid percent-encoded UTF-8' }
      }
      if (escapesSeparator(segment))
        return { ok: false, message: 'The path must not hold an escaped "%" before ".", "/" or "\\"' }
    }
    for (const piece of segment.split(/[/\\]/))
      if (piece === '.' || piece === '..')
        return { ok: false, message: 'The path must not contain "." or ".." segments' }
    segments.push(segment)
  }
  return { ok: true, segments }
}

/** One path a service serves, as `METHOD /a/*\/b` in the table: `*` is any one segment. */
export interface ServedPath {
  methods: ReadonlySet<string>
  segments: readonly string[]
}

/** `POST /broadcast/*\/events/*` → its methods (GET brings HEAD, every path OPTIONS) and segments. */
export function servedPath(spec: string): ServedPath {
  const [method, path] = spec.split(' ') as [string, string]
  const methods = new Set([method, 'OPTIONS'])
  if (method === 'GET') methods.add('HEAD')
  return { methods, segments: path.split('/').filter(Boolean) }
}

const parsed = new WeakMap<ServiceRow, readonly ServedPath[]>()

/** A row's allow-list, parsed once; undefined where the row serves every path below its prefix. */
function servedBy(row: ServiceRow): readonly ServedPath[] | undefined {
  if (row.served === undefined) return undefined
  let paths = parsed.get(row)
  if (paths === undefined) {
    paths = row.served.map(servedPath)
    parsed.set(row, paths)
  }
  return paths
}

function matches(served: ServedPath, method: string, segments: readonly string[]): boolean {
  if (!served.methods.has(method) || served.segments.length !== segments.length) return false
  return served.segments.every((s, i) => s === '*' || s === segments[i])
}

/** What the service gets below its prefix (the client's bytes), or the refusal. */
export type PathVerdict =
  | { ok: true; rest: string; query: string | undefined }
  | { ok: false; code: 'not_found' | 'validation_failed'; message: string }

/**
 * Whether a request target (path and query, as it came) is served by a service's row: its prefix
 * spelled as supabase-js spells it (any other spelling is refused: no client sends one, and the
 * bytes below it must be the ones forwarded), the rest read in its normal form, and, where the
 * row serves an allow-list, on it.
 */
export function judgeServicePath(row: ServiceRow, method: string, target: string): PathVerdict {
  const q = target.indexOf('?')
  const pathname = q === -1 ? target : target.slice(0, q)
  const prefix = row.prefix
  const next = pathname.charCodeAt(prefix.length)
  if (!pathname.startsWith(prefix) || (pathname.length > prefix.length && (row.exact || next !== 0x2f)))
    return { ok: false, code: 'not_found', message: `${prefix} is served only as its clients spell it` }
  const rest = pathname.slice(prefix.length)
  const served = servedBy(row)
  // Without an allow-list only the refusals below read the path, and a path with no `%`, `.` or `\`
  // has none of them: most requests (`/rest/v1/todos`) are let through without reading it.
  if (served === undefined && !SUSPECT.test(rest))
    return { ok: true, rest, query: q === -1 ? undefined : target.slice(q + 1) }
  const normal = normalPath(rest)
  if (!normal.ok) return { ok: false, code: 'validation_failed', message: normal.message }
  if (served !== undefined && !served.some((s) => matches(s, method, normal.segments)))
    return { ok: false, code: 'not_found', message: `Only what its clients call is served under ${prefix}` }
  return { ok: true, rest, query: q === -1 ? undefined : target.slice(q + 1) }
}

/**
 * Whether an unrouted path reads as one under a service's prefix (`//rest/v1/x`, `/REST/v1/x`,
 * `/rest%2fv1/x`, `/graphql/v1;x`), read leniently: this only chooses the shape of a refusal, in the
 * services' error shape, and nothing unrouted is forwarded.
 */
export function underServicePrefix(target: string, prefixes: readonly string[]): boolean {
  const q = target.indexOf('?')
  const pieces: string[] = []
  for (const raw of (q === -1 ? target : target.slice(0, q)).split(/[/\\]/)) {
    let segment = raw
    try {
      segment = decodeURIComponent(raw)
    } catch {
      // Read as it is: this only chooses the shape of a refusal.
    }
    // A `;` parameter is dropped, as servers that read them drop it from the segment.
    for (const piece of segment.toLowerCase().split(/[/\\]/)) {
      const bare = piece.split(';')[0]!
      if (bare !== '') pieces.push(bare)
    }
  }
  const path = `/${pieces.join('/')}`
  return prefixes.some((p) => path === p || path.startsWith(`${p}/`))
}
