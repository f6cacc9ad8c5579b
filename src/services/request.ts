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
      /** Lower-case names of client headers not sent on (one list per service, shared: never changed). */
      replaced: readonly string[]
      /** Whether the client's `Authorization` is among them (it is dropped or rebuilt). */
      replacesAuthorization: boolean
    }
  | { ok: false; code: 'no_api_key' | 'invalid_api_key' | 'service_key_required' }

/**
 * The lower-case names of the client headers a service's requests replace, with or without
 * `authorization`: the same for every request of a service, so built once (a list grown by pushes
 * on every request cost two allocations).
 */
export function replacedNames(upstream: ServiceUpstream, authorization: boolean): readonly string[] {
  let lists = replacedLists.get(upstream)
  if (lists === undefined) {
    const row = upstream.row
    const names = ['apikey', 'x-forwarded-prefix']
    if (row.sbApiKey) names.push('sb-api-key')
    if (row.websocket) names.push('x-api-key')
    if (upstream.selfHosted && row.addHeaders !== undefined)
      for (const name of Object.keys(row.addHeaders)) names.push(name)
    lists = [Object.freeze(names), Object.freeze([...names, 'authorization'])]
    replacedLists.set(upstream, lists)
  }
  return lists[authorization ? 1 : 0]
}
const replacedLists = new WeakMap<ServiceUpstream, readonly [readonly string[], readonly string[]]>()

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
 *
 * The path is one `judgeServicePath` served (src/services/path.ts): the client's bytes below the
 * prefix and its query.
 */
export function planServiceRequest(
  upstream: ServiceUpstream,
  book: KeyBook,
  defaultKey: string | undefined,
  target: { rest: string; query: string | undefined },
  headers: IncomingHttpHeaders,
): ServiceRequestPlan {
  const row = upstream.row
  let query = target.query ?? ''
  let authorization = first(headers.authorization)
  const presented = first(headers.apikey) ?? queryKey(query) ?? keyInAuthorization(authorization) ?? defaultKey
  const verdict = book.judge(presented, row.key)
  if (!verdict.ok) return verdict
  const key = verdict.key
  const set: string[] = []
  let replacesAuthorization = false
  if (key !== undefined) {
    set.push('apikey', key)
    if (query !== '' && presented !== key && queryKey(query) !== undefined) query = withQueryKey(query, key)
  }

  if (row.dropEmptyAuthorization && authorization !== undefined && authorization.trim() === '') {
    authorization = undefined
    replacesAuthorization = true
  }
  const bearerKey = keyInAuthorization(authorization)
  if (row.bearerFromKey && bearerKey !== undefined) {
    // A key in Authorization is judged as one: a secret key there is not let through as the anon key.
    const own = book.judge(bearerKey, row.key)
    if (!own.ok) return own
    replacesAuthorization = true
    set.push('authorization', book.bearer(own.key!))
  } else if (row.bearerFromKey && authorization === undefined && key !== undefined) {
    set.push('authorization', book.bearer(key))
  }
  // The names these replace are in `replacedNames`, in the same cases.
  if (row.sbApiKey && key !== undefined) set.push('sb-api-key', key)
  if (row.websocket && key !== undefined) set.push('x-api-key', key)
  if (upstream.selfHosted && row.addHeaders !== undefined)
    for (const [name, value] of Object.entries(row.addHeaders)) set.push(name, value)
  if (upstream.host !== undefined) set.push('host', upstream.host)
  set.push('x-forwarded-prefix', row.prefix)

  const path = upstream.basePath + target.rest
  return {
    ok: true,
    path: (path === '' ? '/' : path) + (target.query === undefined ? '' : `?${query}`),
    set,
    replaced: replacedNames(upstream, replacesAuthorization),
    replacesAuthorization,
  }
}
