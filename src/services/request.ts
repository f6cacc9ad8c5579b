import type { IncomingHttpHeaders } from 'node:http'
import type { ServiceUpstream } from './config.ts'
import { keyInAuthorization, queryKey, withQueryKey, type KeyBook } from './keys.ts'

/** What goes to a service in place of what the client sent, or the refusal. */
export type ServiceRequestPlan =
  | {
      ok: true
      /** Upstream path and query. */
      path: string
      /** Headers set by authgate (flat [name, value, ...]); the client's copies are among `replaced`. */
      set: string[]
      /** Lower-case names of client headers not sent on. */
      replaced: string[]
    }
  | { ok: false; code: 'no_api_key' | 'invalid_api_key' | 'service_key_required' }
  | { ok: false; code: 'validation_failed'; message: string }

/**
 * True when a segment of the path is `.` or `..` once percent-decoded (or holds an encoded `/` or
 * `\` around one): the upstream, or hosted Supabase's gateway, would resolve it and the request
 * could leave the service's prefix (`/rest/v1/../../auth/v1/admin/users`). Supabase's gateway
 * normalises such paths; authgate refuses them, since it never routes by the resolved path.
 */
export function hasDotSegment(path: string): boolean {
  for (const segment of path.split('/')) {
    if (segment === '') continue
    let decoded = segment
    try {
      decoded = decodeURIComponent(segment)
    } catch {
      // A malformed escape is the upstream's to refuse; it cannot decode to a dot segment here.
    }
    for (const piece of decoded.split(/[/\\]/)) if (piece === '.' || piece === '..') return true
  }
  return false
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/**
 * The upstream request of one service request: the prefix rewritten, the key judged and translated,
 * and the headers Supabase's gateway sets (docs/services.md has the table):
 * - the key is the `apikey` header, else the query's `apikey` (browsers' WebSocket, `<img>` links),
 *   else a key sent as `Authorization: Bearer sb_…`, else the configured one;
 * - a known key goes on as the legacy JWT it stands for, in `apikey` and the query alike;
 * - `Authorization: Bearer <key>` is built when there is none (or it carries a key), never over a
 *   user's JWT, on the services whose row says so;
 * - an empty `Authorization` is dropped for Storage, the key goes in `sb-api-key` for functions and
 *   in `x-api-key` for Realtime's socket, and GraphQL gets `Content-Profile: graphql_public`;
 * - `X-Forwarded-Prefix` says where the client saw the service (Storage builds URLs with it).
 */
export function planServiceRequest(
  upstream: ServiceUpstream,
  book: KeyBook,
  defaultKey: string | undefined,
  url: string,
  headers: IncomingHttpHeaders,
): ServiceRequestPlan {
  const row = upstream.row
  const q = url.indexOf('?')
  const pathname = q === -1 ? url : url.slice(0, q)
  let query = q === -1 ? '' : url.slice(q + 1)
  if (hasDotSegment(pathname.slice(row.prefix.length)))
    return { ok: false, code: 'validation_failed', message: 'The path must not contain "." or ".." segments' }
  let authorization = first(headers.authorization)
  const presented = first(headers.apikey) ?? queryKey(query) ?? keyInAuthorization(authorization) ?? defaultKey
  const verdict = book.judge(presented, row.key)
  if (!verdict.ok) return verdict
  const key = verdict.key
  const set: string[] = []
  const replaced = ['apikey', 'x-forwarded-prefix']
  if (key !== undefined) {
    set.push('apikey', key)
    if (query !== '' && presented !== key && queryKey(query) !== undefined) query = withQueryKey(query, key)
  }

  if (row.dropEmptyAuthorization && authorization !== undefined && authorization.trim() === '') {
    authorization = undefined
    replaced.push('authorization')
  }
  const bearerKey = keyInAuthorization(authorization)
  if (row.bearerFromKey && bearerKey !== undefined) {
    // A key in Authorization is judged as one: a secret key there is not let through as the anon key.
    const own = book.judge(bearerKey, row.key)
    if (!own.ok) return own
    replaced.push('authorization')
    set.push('authorization', `Bearer ${own.key!}`)
  } else if (row.bearerFromKey && authorization === undefined && key !== undefined) {
    set.push('authorization', `Bearer ${key}`)
  }
  if (row.sbApiKey) {
    replaced.push('sb-api-key')
    if (key !== undefined) set.push('sb-api-key', key)
  }
  if (row.websocket) {
    replaced.push('x-api-key')
    if (key !== undefined) set.push('x-api-key', key)
  }
  if (upstream.selfHosted && row.addHeaders !== undefined)
    for (const [name, value] of Object.entries(row.addHeaders)) {
      replaced.push(name)
      set.push(name, value)
    }
  if (upstream.host !== undefined) set.push('host', upstream.host)
  set.push('x-forwarded-prefix', row.prefix)

  const rest = pathname.slice(row.prefix.length)
  const path = upstream.basePath + rest
  return { ok: true, path: (path === '' ? '/' : path) + (q === -1 ? '' : `?${query}`), set, replaced }
}
