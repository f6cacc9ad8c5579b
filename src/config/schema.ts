import type { Env } from './env.ts'
import { editDistance } from '../core/did-you-mean.ts'

/**
 * Every setting the service reads, in one list: `--help` prints it, the README's configuration
 * table is generated from it (`npm run docs:settings`, checked by a test), unknown `AUTHGATE_*`
 * variables are found against it, and the readers take their defaults from it, so the default
 * shown is the default used.
 */
export interface Setting {
  name: string
  group: string
  /** The default, written as a value of the variable would be; undefined when there is none. */
  default?: string
  /** How the default reads in the docs when it is not a plain value (`none`, a derived value). */
  defaultText?: string
  meaning: string
}

export const SETTINGS: readonly Setting[] = [
  // Server
  { name: 'PORT', group: 'Server', default: '8080', meaning: 'listening port' },
  {
    name: 'AUTHGATE_WORKERS',
    group: 'Server',
    default: '1',
    meaning:
      'processes serving the port (`auto`: one per core); without Redis the primary keeps the one rate-limit store so limits stay exact',
  },
  { name: 'HOST', group: 'Server', default: '0.0.0.0', meaning: 'listening address' },
  {
    name: 'AUTHGATE_PREFIX',
    group: 'Server',
    default: '/auth',
    meaning: 'mount prefix of the auth routes (`/` for none)',
  },
  {
    name: 'AUTHGATE_TRUSTED_PROXIES',
    group: 'Server',
    defaultText: 'none',
    meaning:
      'comma list of IPs/CIDRs whose `X-Forwarded-For` (and `X-Request-Id`) is believed; the client IP is otherwise the socket address',
  },
  {
    name: 'AUTHGATE_CORS_ORIGINS',
    group: 'Server',
    defaultText: 'none (no CORS)',
    meaning:
      'browser origins allowed to call the auth routes: a comma list (`https://app.example.com`, credentials allowed) or `*` (any origin, no credentials)',
  },
  // Backend
  {
    name: 'AUTHGATE_BACKEND_URL',
    group: 'Backend',
    default: 'http://localhost:9999',
    meaning: 'Supabase Auth base URL; may carry a path (hosted: `https://<ref>.supabase.co/auth/v1`)',
  },
  {
    name: 'AUTHGATE_BACKEND_APIKEY',
    group: 'Backend',
    defaultText: 'none',
    meaning:
      "hosted Supabase: the project's publishable (anon) key, sent as `apikey` on every backend request in place of the client's",
  },
  {
    name: 'AUTHGATE_BACKEND_TIMEOUT',
    group: 'Backend',
    default: '15s',
    meaning: 'time the backend has to send its response headers, and most time between two body chunks',
  },
  {
    name: 'AUTHGATE_BACKEND_CONNECT_TIMEOUT',
    group: 'Backend',
    default: '5s',
    meaning: 'time to open a connection to the backend',
  },
  {
    name: 'AUTHGATE_BACKEND_CONNECTIONS',
    group: 'Backend',
    default: '128',
    meaning: 'most keep-alive connections to the backend',
  },
  // Client limits
  {
    name: 'AUTHGATE_CACHE_TTL',
    group: 'Backend',
    default: '10s',
    meaning:
      "how long `GET /settings` is answered from authgate's cache when the backend sends no freshness (`0` or `off`: only what the backend marks cacheable, e.g. `/.well-known/*` for 10 min)",
  },
  {
    name: 'AUTHGATE_DISABLED_GROUPS',
    group: 'Backend',
    defaultText: 'none',
    meaning:
      'comma list of route groups not mounted (404, absent from the document): `oauth`, `passkeys`, `mfa`, `identities`, `sso`',
  },
  {
    name: 'AUTHGATE_BODY_LIMIT',
    group: 'Client limits',
    default: '1mib',
    meaning: 'largest request body (bytes, or `512kb`, `1mib`, ...)',
  },
  {
    name: 'AUTHGATE_MAX_HEADER_SIZE',
    group: 'Client limits',
    default: '16kib',
    meaning: 'largest request head (request line and headers); over it: 431',
  },
  {
    name: 'AUTHGATE_HEADER_TIMEOUT',
    group: 'Client limits',
    default: '10s',
    meaning:
      'time a client has to send the request head, from its first byte; over it: 408 and the connection is closed',
  },
  {
    name: 'AUTHGATE_REQUEST_TIMEOUT',
    group: 'Client limits',
    default: '30s',
    meaning: 'time a client has to send the whole request, body included; over it: 408 and the connection is closed',
  },
  {
    name: 'AUTHGATE_KEEP_ALIVE_TIMEOUT',
    group: 'Client limits',
    default: '72s',
    meaning:
      "how long an idle client connection is kept open (above a load balancer's idle timeout); one that has not sent its first request, or sends only bytes that begin none, is closed once it has had no request for this plus `AUTHGATE_HEADER_TIMEOUT`",
  },
  {
    name: 'AUTHGATE_MAX_REQUESTS_PER_SOCKET',
    group: 'Client limits',
    default: '0',
    meaning: 'requests served on one client connection before it is closed; `0` for no limit',
  },
  {
    name: 'AUTHGATE_MAX_CONNECTIONS',
    group: 'Client limits',
    default: '10000',
    meaning:
      'most client connections open at once (idle keep-alive ones included); beyond it a new connection is closed at once, so slow or idle clients cannot take the descriptors the backend and Redis need; `0` for no limit',
  },
  {
    name: 'AUTHGATE_SOCKET_TIMEOUT',
    group: 'Client limits',
    defaultText: 'backend timeout + 15s',
    meaning:
      'longest a client connection with a request open may go without a byte moving either way (a client that stops reading its answer); over it the connection is closed; longer than the backend timeout, or `0` for none',
  },
  // Logs, metrics and health
  {
    name: 'AUTHGATE_LOG_LEVEL',
    group: 'Observability',
    default: 'info',
    meaning: '`fatal` … `trace`, or `silent`; one line per request at `info`',
  },
  {
    name: 'AUTHGATE_REQUEST_ID_HEADER',
    group: 'Observability',
    default: 'x-request-id',
    meaning: 'request id header: taken from trusted proxies, otherwise generated; sent to the backend and returned',
  },
  {
    name: 'AUTHGATE_METRICS_PATH',
    group: 'Observability',
    default: '/metrics',
    meaning: 'Prometheus metrics; `off` to not serve them',
  },
  {
    name: 'AUTHGATE_METRICS_PORT',
    group: 'Observability',
    defaultText: 'none (the main port)',
    meaning: 'serve the metrics on this port only, not on the public one',
  },
  {
    name: 'AUTHGATE_METRICS_HOST',
    group: 'Observability',
    default: '127.0.0.1',
    meaning:
      'the address the `AUTHGATE_METRICS_PORT` listener binds: loopback by default; `0.0.0.0` (or the pod/container address) for a Prometheus on another host, with that port kept off the public network',
  },
  {
    name: 'AUTHGATE_LIVENESS_PATH',
    group: 'Observability',
    default: '/livez',
    meaning: 'liveness of authgate itself: 200 while the process serves requests',
  },
  {
    name: 'AUTHGATE_READINESS_PATH',
    group: 'Observability',
    default: '/readyz',
    meaning:
      'readiness of this instance: 200 once it can serve, 503 once shutting down; the state of Supabase Auth and Redis is in the body',
  },
  {
    name: 'AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES',
    group: 'Observability',
    default: 'false',
    meaning:
      '`true`: readiness is also 503 while Supabase Auth or Redis is down (every replica shares them, so an outage takes all out of rotation)',
  },
  {
    name: 'AUTHGATE_TRACING',
    group: 'Observability',
    default: 'off',
    meaning:
      '`otlp`: OpenTelemetry traces (a server span per request, a client span per Supabase Auth call) sent over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (default http://localhost:4318), service name `OTEL_SERVICE_NAME` (default authgate)',
  },
  // Shutdown
  {
    name: 'AUTHGATE_SHUTDOWN_TIMEOUT',
    group: 'Shutdown',
    defaultText: 'backend timeout + 5s',
    meaning: 'on SIGTERM/SIGINT, longest wait for requests in flight before their connections are cut',
  },
  {
    name: 'AUTHGATE_SHUTDOWN_DELAY',
    group: 'Shutdown',
    default: '0s',
    meaning:
      'on SIGTERM/SIGINT, time readiness reports 503 while still accepting, so load balancers stop sending first',
  },
  // Rate limiting
  {
    name: 'AUTHGATE_RATE_LIMIT',
    group: 'Rate limiting',
    default: '30/5m',
    meaning:
      'default rate per client IP and route of the per-client limits: `COUNT/WINDOW[;burst=N]` (windows in s, m, h, d)',
  },
  {
    name: 'AUTHGATE_RATE_LIMITED_ROUTES',
    group: 'Rate limiting',
    defaultText: 'the sign-up, sign-in and message routes, MFA challenge and verify',
    meaning:
      'the routes with a per-client-IP limit: a comma list of `METHOD /template` (relative to the prefix) that replaces the default list; `none`: no per-client-IP limit on any route (the per-account limits and the e-mail and SMS budgets stay on: `AUTHGATE_ACCOUNT_RATE_LIMIT`, `AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT`, `AUTHGATE_EMAIL_BUDGET`, `AUTHGATE_SMS_BUDGET` turn them off)',
  },
  {
    name: 'AUTHGATE_RATE_LIMIT_ROUTES',
    group: 'Rate limiting',
    defaultText: 'none',
    meaning:
      'per-route rates of the per-client-IP limit, `METHOD /template=RATE` or `=off`, comma separated; naming a route here also limits it. The services beside Auth by their absolute path (`GET /rest/v1/*=100/1s`, `POST /storage/v1/*`, `GET /graphql/v1`); the methods of one path share a bucket',
  },
  {
    name: 'AUTHGATE_REDIS_URL',
    group: 'Rate limiting',
    defaultText: 'none (memory store)',
    meaning:
      'share budgets across replicas (Redis or Valkey): `redis://host:6379`, `redis+sentinel://s1:26379,s2:26379/<master>`, `redis+cluster://n1:6379,n2:6379`; `rediss…` for TLS',
  },
  {
    name: 'AUTHGATE_REDIS_SENTINEL_PASSWORD',
    group: 'Rate limiting',
    defaultText: 'none',
    meaning: "Sentinel only: the sentinels' own password (Redis's is in the URL)",
  },
  {
    name: 'AUTHGATE_REDIS_TLS_CA',
    group: 'Rate limiting',
    defaultText: "none (Node.js's trusted CAs)",
    meaning:
      'path of a PEM file with the CA certificate(s) that signed the Redis (and sentinel) certificates, for `rediss…` URLs; replaces the default trust',
  },
  {
    name: 'AUTHGATE_REDIS_KEY_PREFIX',
    group: 'Rate limiting',
    default: 'authgate:rl:',
    meaning: 'prefix of every Redis key',
  },
  {
    name: 'AUTHGATE_REDIS_TIMEOUT',
    group: 'Rate limiting',
    default: '100ms',
    meaning: 'longest a request waits on Redis',
  },
  {
    name: 'AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR',
    group: 'Rate limiting',
    default: 'open',
    meaning: '`open` (allow, log, count) or `closed` (429) while Redis cannot answer',
  },
  {
    name: 'AUTHGATE_RATE_LIMIT_IPV6_PREFIX',
    group: 'Rate limiting',
    default: '64',
    meaning: 'IPv6 clients are keyed by this prefix length',
  },
  {
    name: 'AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS',
    group: 'Rate limiting',
    default: '500000',
    meaning: 'memory store: most buckets held at once',
  },
  // Abuse protection
  {
    name: 'AUTHGATE_ACCOUNT_RATE_LIMIT',
    group: 'Abuse protection',
    default: '10/15m',
    meaning:
      'per-account rate of failed password sign-ins (`POST /token?grant_type=password`: only those Supabase Auth refuses count) and of `POST /signup`, whatever the client IP: the account is the e-mail or phone of the body, as an HMAC; `off`: neither limited per account',
  },
  {
    name: 'AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT',
    group: 'Abuse protection',
    default: '5/1h',
    meaning:
      'per-account rate of the routes that send a message: `POST /otp`, `/magiclink`, `/recover`, `/resend`; `off`: none of them limited per account',
  },
  {
    name: 'AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES',
    group: 'Abuse protection',
    defaultText: 'none',
    meaning:
      'per-route per-account rates, `METHOD /template=RATE` or `=off`, comma separated (routes: `POST /token`, `/signup`, `/otp`, `/magiclink`, `/recover`, `/resend`)',
  },
  {
    name: 'AUTHGATE_ACCOUNT_KEY_SECRET',
    group: 'Abuse protection',
    defaultText: 'random per process',
    meaning:
      "secret of the HMAC that turns an e-mail or phone into a rate-limit key, and of the device cookies (at least 32 characters); the same on every replica sharing a Redis (the workers of one service share the primary's random one)",
  },
  {
    name: 'AUTHGATE_ACCOUNT_DEVICE_COOKIE',
    group: 'Abuse protection',
    default: 'on',
    meaning:
      '`on`: a successful password sign-in sets an HttpOnly device cookie bound to the account, and a browser presenting it has a per-account budget of its own (half of `AUTHGATE_ACCOUNT_RATE_LIMIT`) that strangers cannot spend; `off`: none is set or read',
  },
  {
    name: 'AUTHGATE_EMAIL_BUDGET',
    group: 'Abuse protection',
    default: '30',
    meaning:
      "Supabase Auth's e-mail budget per hour as set in its `GOTRUE_RATE_LIMIT_EMAIL_SENT`: authgate lets at most this many e-mail-sending requests through in any hour, cluster-wide, and answers 429 first; `off` for none",
  },
  {
    name: 'AUTHGATE_SMS_BUDGET',
    group: 'Abuse protection',
    default: '30',
    meaning: "the same for SMS, as set in Supabase Auth's `GOTRUE_RATE_LIMIT_SMS_SENT`; `off` for none",
  },
  {
    name: 'AUTHGATE_BUDGET_CLIENT_SHARE',
    group: 'Abuse protection',
    default: '20%',
    meaning:
      'most of each budget one client IP may spend while the budget is short (less than half of its burst left); a client alone is not held to it while there is room (`100%`: no share limit)',
  },
  {
    name: 'AUTHGATE_CLIENT_IP_HEADER',
    group: 'Abuse protection',
    default: 'X-Forwarded-For',
    meaning:
      "the header that carries the client IP to Supabase Auth (one value); set Supabase Auth's `GOTRUE_RATE_LIMIT_HEADER` to the same name. Hosted Supabase: `Sb-Forwarded-For`, with a secret key in `AUTHGATE_BACKEND_APIKEY`",
  },
  {
    name: 'AUTHGATE_PUBLIC_URL',
    group: 'Abuse protection',
    defaultText: 'none',
    meaning:
      "the URL clients reach authgate's auth routes at (origin and prefix, e.g. `https://api.example.com/auth`): `authgate doctor` checks Supabase Auth's issuer and links against it",
  },
  // Cookie sessions
  {
    name: 'AUTHGATE_SESSIONS',
    group: 'Cookie sessions',
    default: 'off',
    meaning:
      'session answers kept by authgate and answered with an HttpOnly cookie (docs/sessions.md): `on` for every request, `request` for requests with `X-Authgate-Session: cookie`, `off`',
  },
  {
    name: 'AUTHGATE_SESSION_KEYS',
    group: 'Cookie sessions',
    defaultText: 'none (required when on)',
    meaning:
      'AES-256-GCM keys that encrypt stored tokens: comma list of `<id>:<base64 of 32 bytes>`; the first encrypts, all decrypt (rotation)',
  },
  {
    name: 'AUTHGATE_SESSION_STORE',
    group: 'Cookie sessions',
    default: 'memory',
    meaning: '`memory` (this process) or `redis` (AUTHGATE_REDIS_URL; shared by replicas, kept across restarts)',
  },
  {
    name: 'AUTHGATE_SESSION_LIFETIME',
    group: 'Cookie sessions',
    default: '168h',
    meaning: "longest life of a session from sign-in; at most the refresh token's at Supabase Auth",
  },
  {
    name: 'AUTHGATE_SESSION_IDLE_TIMEOUT',
    group: 'Cookie sessions',
    default: '24h',
    meaning: 'a session not used for this long ends',
  },
  {
    name: 'AUTHGATE_SESSION_ORIGINS',
    group: 'Cookie sessions',
    defaultText: 'AUTHGATE_CORS_ORIGINS',
    meaning:
      "origins besides the request's own that may send cookie-authenticated POST, PUT, PATCH and DELETE requests and GETs that change state (others get 403)",
  },
  {
    name: 'AUTHGATE_SESSION_REVALIDATE',
    group: 'Cookie sessions',
    default: '1m',
    meaning:
      "longest a session goes unconfirmed by Supabase Auth before authgate asks again (one `GET /user` per session in use per interval) on the application's protected routes and `GET /session`; a session signed out elsewhere ends here within it",
  },
  {
    name: 'AUTHGATE_SESSION_OAUTH_CONSENT',
    group: 'Cookie sessions',
    default: 'off',
    meaning:
      "`off`: the OAuth consent routes (`/oauth/authorizations/…`) refuse the session cookie (403); a duration (`5m`) lets a consent page that is not the application's take it from a session signed in at most that long ago, or on a same-origin top-level navigation",
  },
  {
    name: 'AUTHGATE_SESSION_COOKIE_NAME',
    group: 'Cookie sessions',
    default: '__Host-authgate-session',
    meaning: 'name of the session cookie',
  },
  {
    name: 'AUTHGATE_SESSION_COOKIE_SECURE',
    group: 'Cookie sessions',
    default: 'true',
    meaning: '`false` only for plain-http development, with a cookie name without `__Host-`',
  },
  {
    name: 'AUTHGATE_SESSION_KEY_PREFIX',
    group: 'Cookie sessions',
    default: 'authgate:session:',
    meaning: 'Redis store: prefix of every session key',
  },
  {
    name: 'AUTHGATE_SESSION_REDIS_TIMEOUT',
    group: 'Cookie sessions',
    default: '500ms',
    meaning: 'Redis store: longest wait for one command (a request then gets 503)',
  },
  // The OAuth 2.1 server's additions (docs/mcp.md)
  {
    name: 'AUTHGATE_OAUTH_CLIENT_METADATA',
    group: 'OAuth server',
    default: 'off',
    meaning:
      'client ID metadata documents: an https URL as `client_id`, its document fetched (no private addresses, 5 KiB, 5 s, cached by its HTTP freshness) and registered at Supabase Auth as a public client (needs `GOTRUE_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION`); `any` https origin or a comma list of origins whose documents are accepted. The mapping lives in Redis when AUTHGATE_REDIS_URL is set',
  },
  {
    name: 'AUTHGATE_OAUTH_CLIENT_METADATA_PRIVATE_ORIGINS',
    group: 'OAuth server',
    defaultText: 'none',
    meaning:
      'comma list of document origins whose host may resolve to private or loopback addresses (an internal document server; tests). Leave unset for public clients',
  },
  {
    name: 'AUTHGATE_OAUTH_CLIENT_METADATA_CA',
    group: 'OAuth server',
    defaultText: 'none',
    meaning: "PEM file of CA certificates trusted for documents besides Node.js's own (an internal CA; tests)",
  },
  {
    name: 'AUTHGATE_OAUTH_CONSENT_PAGE',
    group: 'OAuth server',
    default: 'off',
    meaning:
      "authgate's own OAuth consent page at this path (set `GOTRUE_OAUTH_SERVER_AUTHORIZATION_PATH` to it, under `GOTRUE_SITE_URL` = authgate's origin), e.g. `/oauth/consent`: the user signs in (bearer token, session cookie where AUTHGATE_SESSION_OAUTH_CONSENT allows, or e-mail and password under `POST /token`'s limits) and approves or denies",
  },
  // Services beyond Auth (src/services/table.ts)
  {
    name: 'AUTHGATE_SUPABASE_URL',
    group: 'Services',
    defaultText: 'none',
    meaning:
      'hosted Supabase (`https://<ref>.supabase.co`): every service at its usual path (`/rest/v1`, `/graphql/v1`, `/storage/v1`, `/functions/v1`, `/realtime/v1`) is served by authgate too; also the Auth backend when `AUTHGATE_BACKEND_URL` is unset',
  },
  {
    name: 'AUTHGATE_REST_URL',
    group: 'Services',
    defaultText: 'none (not served)',
    meaning: 'self-hosted PostgREST (`http://rest:3000`): `/rest/v1/*` and `/graphql/v1` (as `/rpc/graphql`)',
  },
  {
    name: 'AUTHGATE_STORAGE_URL',
    group: 'Services',
    defaultText: 'none (not served)',
    meaning: 'self-hosted Storage (`http://storage:5000`): `/storage/v1/*`',
  },
  {
    name: 'AUTHGATE_STORAGE_SANDBOX',
    group: 'Services',
    default: 'on',
    meaning:
      "with the Storage service: its answers carry `X-Content-Type-Options: nosniff` and `Content-Security-Policy: sandbox` (PDFs `nosniff` only), so an uploaded HTML or SVG file opened from authgate's origin runs no script there; `off` only when Storage's files are served from an origin of their own",
  },
  {
    name: 'AUTHGATE_FUNCTIONS_URL',
    group: 'Services',
    defaultText: 'none (not served)',
    meaning: 'self-hosted Edge Runtime (`http://functions:9000`): `/functions/v1/*`, 150 s to answer',
  },
  {
    name: 'AUTHGATE_REALTIME_URL',
    group: 'Services',
    defaultText: 'none (not served)',
    meaning:
      'self-hosted Realtime (`http://realtime-dev.supabase-realtime:4000`): the WebSocket `/realtime/v1/websocket` and, of `/realtime/v1/api/*`, what realtime-js calls (its HTTP broadcasts) and `GET /ping`, never the tenant administration',
  },
  {
    name: 'AUTHGATE_REALTIME_TENANT',
    group: 'Services',
    defaultText: "the Realtime URL's host",
    meaning: 'the `Host` sent to Realtime, whose first label names the tenant (`realtime-dev` for `supabase start`)',
  },
  {
    name: 'AUTHGATE_META_URL',
    group: 'Services',
    defaultText: 'none (not served)',
    meaning: 'self-hosted pg-meta (`http://meta:8080`): `/pg/*`, for the service-role key only',
  },
  {
    name: 'AUTHGATE_ANON_KEY',
    group: 'Services',
    defaultText: 'none',
    meaning:
      "the project's legacy anon JWT: what a publishable key becomes in `apikey` and `Authorization` on the way to a service",
  },
  {
    name: 'AUTHGATE_SERVICE_ROLE_KEY',
    group: 'Services',
    defaultText: 'none',
    meaning: "the project's legacy service-role JWT: what a secret key becomes; the only key `/pg/*` accepts",
  },
  {
    name: 'AUTHGATE_PUBLISHABLE_KEYS',
    group: 'Services',
    defaultText: 'none',
    meaning: 'comma list of `sb_publishable_…` keys accepted and translated to the anon key',
  },
  {
    name: 'AUTHGATE_SECRET_KEYS',
    group: 'Services',
    defaultText: 'none',
    meaning:
      'comma list of `sb_secret_…` keys accepted and translated to the service-role key. With any of these four keys set, a service request with another key is refused (401)',
  },
  {
    name: 'AUTHGATE_USER_RATE_LIMIT_ROUTES',
    group: 'Services',
    defaultText: 'none',
    meaning:
      "per-user rates on the services' routes, as `AUTHGATE_RATE_LIMIT_ROUTES` writes them (`GET /rest/v1/*=600/1m`): the user is the `sub` of the access token, verified with Supabase Auth's key set (with cookie sessions, of the real token behind a stand-in); requests without one count per client only. Not on the socket's route (`GET /realtime/v1/websocket`), whose handshake carries no user's token: limit it per client",
  },
  {
    name: 'AUTHGATE_REST_DOCUMENT_REFRESH',
    group: 'Services',
    default: '5m',
    meaning:
      "with the REST service: how often PostgREST's description of the tables (fetched with the service key at start) is fetched again and merged into the document and reference page under its own tag; `off` to leave it out",
  },
  // Documentation
  {
    name: 'AUTHGATE_OPENAPI_PATH',
    group: 'Documentation',
    default: '/openapi.json',
    meaning: 'the OpenAPI 3.1 document; `off` turns off both documents and the page',
  },
  {
    name: 'AUTHGATE_OPENAPI30_PATH',
    group: 'Documentation',
    defaultText: 'the document path with `-3.0` (`/openapi-3.0.json`)',
    meaning: 'the OpenAPI 3.0.3 rendering of the same document; `off` to not serve it',
  },
  {
    name: 'AUTHGATE_DOCS_PATH',
    group: 'Documentation',
    default: '/docs',
    meaning: 'the interactive reference page (served by authgate itself; works offline); `off` to not serve it',
  },
  {
    name: 'AUTHGATE_API_TITLE',
    group: 'Documentation',
    default: 'API Documentation',
    meaning: '`info.title` of the document',
  },
  { name: 'AUTHGATE_API_VERSION', group: 'Documentation', default: '1.0.0', meaning: '`info.version` of the document' },
  {
    name: 'AUTHGATE_DOCS_EXAMPLE_USER',
    group: 'Documentation',
    defaultText: 'none',
    meaning:
      '`email:password` that the reference page\'s sign-in examples are filled with, so that "try it" signs in at once (`npm run dev` sets its test user). Anyone who opens the page sees it: for development stacks only',
  },
]

const BY_NAME = new Map(SETTINGS.map((s) => [s.name, s]))

/**
 * `AUTHGATE_*` variables this repository's tools read (the end-to-end suite, scripts), not the
 * service: present in a developer's environment, so not reported as unknown.
 */
export const TOOL_VARIABLES: readonly string[] = [
  'AUTHGATE_SUPABASE_AUTH_BIN',
  'AUTHGATE_SUPABASE_AUTH_SRC',
  'AUTHGATE_SUPABASE_AUTH_SOURCE_DIR',
  'AUTHGATE_CHROMIUM',
  'AUTHGATE_E2E_MAIN',
  'AUTHGATE_E2E_DATABASE',
  // e2e/mcp.test.ts prints the exchanges of its flow (docs/mcp.md).
  'AUTHGATE_E2E_TRANSCRIPT',
  // e2e/mcp-sdk.test.ts saves the consent page as Chromium shows it there (docs/e2e.md).
  'AUTHGATE_E2E_SCREENSHOTS',
  // npm test: how many test files run at a time (scripts/test.ts).
  'AUTHGATE_TEST_CONCURRENCY',
  // test/oracle/oracle.test.ts and npm run fuzz: the seed and the number of generated requests.
  'AUTHGATE_ORACLE_SEED',
  'AUTHGATE_ORACLE_RUNS',
]

/** The variable's value, or the setting's default when unset or blank. */
export function settingValue(env: Env, name: string): string | undefined {
  const setting = BY_NAME.get(name)
  if (setting === undefined) throw new Error(`${name} is not in the settings schema`)
  const v = env[name]
  if (v !== undefined && v.trim() !== '') return v.trim()
  return setting.default
}

/** The text the docs show as the default. */
export function defaultText(setting: Setting): string {
  return setting.defaultText ?? setting.default ?? 'none'
}

// Shared with the command line's suggestions; exported here too, where the settings' tests find it.
export { editDistance }

/** The known setting closest to `name`. */
export function closestSetting(name: string): string {
  let best = SETTINGS[0]!.name
  let bestDistance = Infinity
  for (const s of SETTINGS) {
    const distance = editDistance(name, s.name)
    if (distance < bestDistance) {
      best = s.name
      bestDistance = distance
    }
  }
  return best
}

/** Every `AUTHGATE_*` variable of the environment that is no setting, with the closest known name. */
export function unknownVariables(env: Env): Array<{ name: string; closest: string }> {
  const out: Array<{ name: string; closest: string }> = []
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('AUTHGATE_') || BY_NAME.has(name) || TOOL_VARIABLES.includes(name)) continue
    out.push({ name, closest: closestSetting(name) })
  }
  return out
}

/** `--help`: every setting with its default, by group. */
export function settingsHelp(): string {
  const lines: string[] = []
  let group = ''
  const width = Math.max(...SETTINGS.map((s) => s.name.length))
  for (const s of SETTINGS) {
    if (s.group !== group) {
      group = s.group
      lines.push('', `${group}:`)
    }
    lines.push(`  ${s.name.padEnd(width)}  default: ${plain(defaultText(s))}`)
    lines.push(`  ${' '.repeat(width)}  ${plain(s.meaning)}`)
  }
  return lines.join('\n').slice(1) + '\n'
}

/** The README's configuration table. */
export function settingsTable(): string {
  const rows = ['| variable | default | meaning |', '|---|---|---|']
  for (const s of SETTINGS) {
    const def = s.default !== undefined && s.defaultText === undefined ? `\`${s.default}\`` : defaultText(s)
    rows.push(`| \`${s.name}\` | ${def} | ${s.meaning} |`)
  }
  return rows.join('\n') + '\n'
}

function plain(markdown: string): string {
  return markdown.replaceAll('`', '')
}
