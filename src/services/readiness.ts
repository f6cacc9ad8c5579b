import { requestThrough } from '../core/backend.ts'
import { READINESS_USER_AGENT } from '../observability/health.ts'
import type { ServiceUpstream } from './config.ts'
import type { ServiceProxy } from './proxy.ts'

/**
 * One probe per upstream the readiness report names (GraphQL is REST's PostgREST and the socket is
 * Realtime's, so neither is probed twice): a GET of the service's base path through its pool,
 * up when anything below 500 answers (a 401 for want of a key is a service that answers), as
 * Supabase Auth's `/health` is judged.
 */
export function serviceProbes(
  proxy: ServiceProxy,
  upstreams: readonly ServiceUpstream[],
  timeoutMs = 2000,
): Array<[string, () => Promise<boolean>]> {
  const out: Array<[string, () => Promise<boolean>]> = []
  for (const upstream of upstreams) {
    if (upstream.row.exact) continue
    const pool = proxy.pool(upstream.origin)
    const headers: Record<string, string> = { 'user-agent': READINESS_USER_AGENT }
    if (upstream.host !== undefined) headers.host = upstream.host
    out.push([
      upstream.label,
      async () => {
        try {
          const answer = await requestThrough.call(pool, {
            method: 'GET',
            path: `${upstream.basePath}/`,
            headers,
            signal: AbortSignal.timeout(timeoutMs),
          })
          await answer.body.dump()
          return answer.statusCode < 500
        } catch {
          return false
        }
      },
    ])
  }
  return out
}
