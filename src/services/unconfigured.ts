import { SERVICE_TABLE, type ServiceName } from './table.ts'

/** The upstream each service is, as a user would look for it. */
const UPSTREAM: Record<ServiceName, string> = {
  rest: 'PostgREST',
  graphql: 'GraphQL (PostgREST)',
  storage: 'Storage',
  functions: 'Edge Functions',
  realtime: 'Realtime',
  meta: 'pg-meta',
}

/**
 * Why a path of a Supabase service that is not mounted has no route: supabase-js derives every
 * service's URL from the one it is given, so a client pointed at an authgate serving Auth only
 * calls `/rest/v1/…` too, and "no route" alone reads as a wrong URL. undefined for any other path,
 * or for a service that is mounted (its own routes answered, so what is left is a plain 404).
 * The service's root is its prefix's first two segments (`/realtime/v1` for both Realtime rows).
 */
export function unconfiguredService(path: string, mounted: ReadonlySet<ServiceName>): string | undefined {
  for (const row of SERVICE_TABLE) {
    if (mounted.has(row.name)) continue
    const root = row.prefix.split('/').slice(0, 3).join('/')
    if (path !== root && !path.startsWith(`${root}/`)) continue
    const where = row.hosted
      ? `set ${row.setting}, or AUTHGATE_SUPABASE_URL for a hosted project`
      : `set ${row.setting}; hosted projects do not offer it`
    return `${UPSTREAM[row.name]} is not configured: authgate serves ${root} only with an upstream for it (${where})`
  }
  return undefined
}
