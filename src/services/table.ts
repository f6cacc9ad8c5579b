/**
 * The Supabase services authgate can serve beside Auth, one row each, as data: mounting, key rules,
 * timeouts, metrics labels and readiness all read this table and nothing else lists services. The
 * rows are what Supabase's own gateway (Kong in `docker/volumes/api/kong.yml`, Envoy in its
 * `lds.template.yaml`) does per service, and what supabase-js expects: it derives every service's URL
 * from the one base URL it is given (`rest/v1`, `storage/v1`, `functions/v1`, `realtime/v1`).
 */

export type ServiceName = 'rest' | 'graphql' | 'storage' | 'functions' | 'realtime' | 'meta'

/**
 * Which keys a service takes (docs/decisions.md, D73):
 * - `required`: an `apikey` (header, query or the configured one) must be there and, when keys are
 *   configured, be one of them;
 * - `optional`: no key is fine (public Storage objects, signed URLs, functions that check their own
 *   credentials), but a key that is given must be known;
 * - `service`: only the service-role key or a secret key (pg-meta manages the database itself).
 */
export type KeyRule = 'required' | 'optional' | 'service'

/** The setting naming a self-hosted service's own URL. */
export type ServiceUrlSetting =
  | 'AUTHGATE_REST_URL'
  | 'AUTHGATE_STORAGE_URL'
  | 'AUTHGATE_FUNCTIONS_URL'
  | 'AUTHGATE_REALTIME_URL'
  | 'AUTHGATE_META_URL'

export interface ServiceRow {
  name: ServiceName
  /** Where authgate serves it: supabase-js's path, which Supabase's gateway serves too. */
  prefix: string
  /** Only the prefix itself is served (GraphQL's one endpoint), not the paths below it. */
  exact: boolean
  /** The setting giving the self-hosted upstream (GraphQL is PostgREST's, so REST's URL). */
  setting: ServiceUrlSetting
  /** Hosted Supabase serves the service at the same path; false where authgate does not offer it there. */
  hosted: boolean
  /** What replaces the prefix on a self-hosted upstream (`''`: the prefix is stripped). */
  upstreamPath: string
  /** Time to the response head and between two body chunks (Envoy's route timeouts). */
  timeoutMs: number
  key: KeyRule
  /**
   * The key becomes `Authorization: Bearer <key>` when the request has no Authorization or carries a
   * key there (`Bearer sb_…`); a user's JWT is kept. Kong leaves the functions' Authorization alone.
   */
  bearerFromKey: boolean
  /** Headers a self-hosted upstream needs that the client does not send. */
  addHeaders?: Readonly<Record<string, string>>
  /** An empty `Authorization` is removed (Storage's S3-style presigned URLs send one). */
  dropEmptyAuthorization?: boolean
  /** The key travels in `sb-api-key` (Edge Runtime's header), replacing the client's. */
  sbApiKey?: boolean
  /**
   * Where the service's API below the prefix is small, the paths its clients call, as
   * `METHOD /a/*` (`*`: any one segment), judged on the path's normal form (src/services/path.ts);
   * anything else is not served. Undefined: every path below the prefix is.
   */
  served?: readonly string[]
  /**
   * Its answers are files users uploaded: made inert on authgate's origin unless the operator
   * turns that off (src/services/user-content.ts).
   */
  userContent?: boolean
  /** A WebSocket endpoint (upgrade requests only), with the key in `x-api-key`. */
  websocket?: boolean
}

const SECOND = 1000

export const SERVICE_TABLE: readonly ServiceRow[] = [
  {
    name: 'rest',
    prefix: '/rest/v1',
    exact: false,
    setting: 'AUTHGATE_REST_URL',
    hosted: true,
    upstreamPath: '',
    timeoutMs: 30 * SECOND,
    key: 'required',
    bearerFromKey: true,
  },
  {
    // pg_graphql is reached through PostgREST: its `graphql.resolve` function in the
    // `graphql_public` schema, which PostgREST selects by `Content-Profile` on a POST.
    name: 'graphql',
    prefix: '/graphql/v1',
    exact: true,
    setting: 'AUTHGATE_REST_URL',
    hosted: true,
    upstreamPath: '/rpc/graphql',
    timeoutMs: 30 * SECOND,
    key: 'required',
    bearerFromKey: true,
    addHeaders: { 'content-profile': 'graphql_public' },
  },
  {
    name: 'storage',
    prefix: '/storage/v1',
    exact: false,
    setting: 'AUTHGATE_STORAGE_URL',
    hosted: true,
    upstreamPath: '',
    timeoutMs: 30 * SECOND,
    key: 'optional',
    bearerFromKey: true,
    dropEmptyAuthorization: true,
    userContent: true,
  },
  {
    name: 'functions',
    prefix: '/functions/v1',
    exact: false,
    setting: 'AUTHGATE_FUNCTIONS_URL',
    hosted: true,
    upstreamPath: '',
    // Edge functions may run for up to 150 s (Kong's and Envoy's functions route).
    timeoutMs: 150 * SECOND,
    key: 'optional',
    bearerFromKey: false,
    sbApiKey: true,
  },
  {
    name: 'realtime',
    prefix: '/realtime/v1/api',
    exact: false,
    setting: 'AUTHGATE_REALTIME_URL',
    hosted: true,
    upstreamPath: '/api',
    timeoutMs: 30 * SECOND,
    key: 'required',
    bearerFromKey: true,
    // What realtime-js calls (`channel.send` before the socket is joined, `channel.httpSend`) and
    // the tenant's own health check. Realtime serves its tenant administration and API description
    // under /api as well, to any JWT signed with the project's secret: those are for operators.
    served: ['POST /broadcast', 'POST /broadcast/*/events/*', 'GET /ping'],
  },
  {
    // Phoenix's socket endpoint; the timeout is the idle one (Realtime's heartbeat is every 25 s).
    name: 'realtime',
    prefix: '/realtime/v1/websocket',
    exact: true,
    setting: 'AUTHGATE_REALTIME_URL',
    hosted: true,
    upstreamPath: '/socket/websocket',
    timeoutMs: 60 * SECOND,
    key: 'required',
    bearerFromKey: false,
    websocket: true,
  },
  {
    // Not on hosted projects: their database is managed through the platform's own API.
    name: 'meta',
    prefix: '/pg',
    exact: false,
    setting: 'AUTHGATE_META_URL',
    hosted: false,
    upstreamPath: '',
    timeoutMs: 30 * SECOND,
    key: 'service',
    bearerFromKey: false,
  },
]

/** The methods a service route answers (OPTIONS too when authgate does not answer CORS). */
export const SERVICE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

/** A row's route as the metrics and rate limits name it: `/rest/v1/*`, `/graphql/v1`. */
export function serviceTemplate(row: ServiceRow): string {
  return row.exact ? row.prefix : `${row.prefix}/*`
}

/**
 * Every service route as AUTHGATE_RATE_LIMIT_ROUTES names one (`GET /rest/v1/*`): the path is
 * absolute, where the auth routes' are relative to the prefix, and all methods of a path share
 * one bucket per client, as the auth routes of one template do.
 */
export function serviceRouteKeys(): string[] {
  const out: string[] = []
  for (const row of SERVICE_TABLE) for (const method of SERVICE_METHODS) out.push(`${method} ${serviceTemplate(row)}`)
  return [...new Set(out)]
}
