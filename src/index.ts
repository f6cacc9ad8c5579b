// authgate's public API: named exports only, each one something an application or an operator's
// tooling uses. Internals (the forwarder, the document builder's steps, bucket naming) stay inside.

// The plugin and the service around it.
export { authgate, type AuthgatePluginOptions, type AuthgateState, type GatewayConfig } from './plugin.ts'
export { buildApp, serverOptions, type AuthgateOptions, type AuthgateService } from './app.ts'
export type { SupabaseAuthClient, BackendOptions } from './core/backend.ts'

// Options: one resolver, one error naming the option.
export type { CoreConfig, CoreConfigInput } from './config.ts'
export { AuthgateConfigError } from './core/config-error.ts'
export { loadRateLimitSettings } from './settings.ts'

// The error answers, in Supabase Auth's shape.
export { AuthgateError, ERRORS, ErrorSchema, sendError, type ErrorCode, type ErrorSpec } from './errors.ts'

// The mounted routes.
export { AUTH_ROUTES, type AuthRoute, type RouteId } from './auth/routes/index.ts'
export { ROUTE_GROUPS, OPTIONAL_GROUPS, type RouteGroup, type OptionalGroup } from './core/route-groups.ts'

// Rate limiting and its stores.
export type { RateLimiter, RateLimiterOptions, RateLimitCounters } from './ratelimit/limiter.ts'
export type { RateLimitConfig, RedisSettings } from './ratelimit/config.ts'
export type { RateLimitOptions } from './ratelimit/options.ts'
export { MemoryStore, type MemoryStoreOptions } from './ratelimit/memory-store.ts'
export { RedisStore } from './ratelimit/redis-store.ts'
export { parseRate, type RateLimitPolicy } from './ratelimit/policy.ts'
export type { Decision, RateLimitStore, StoreStatus } from './ratelimit/store.ts'

// The application's own routes: definition, documentation, the reference page.
export { defineRoute, inPath, inQuery, inHeader, inForm, splitFieldTags, withRules } from './routes-dsl/index.ts'
export type { ExplicitResponse, RouteDefinition, Rules } from './routes-dsl/index.ts'
export { createRegistry, toOpenApi30, type RouteRegistry } from './openapi/index.ts'
export type { DocumentOptions, OpenApiDocument, TagOption, TagRules } from './openapi/index.ts'
export { openApiAjvOptions } from './openapi/annotation-keywords.ts'
export { buildOpenApiDocument, registerDocs, type RegisterDocsOptions } from './docs-server/index.ts'
export type { OpenApiOptions } from './docs-server/index.ts'

// Verifying Supabase Auth's tokens on the application's routes.
export { authgateProtect, type ProtectOptions, type AuthOption, type AuthUser } from './protect/index.ts'
export { TokenRejected, JwksUnavailableError } from './protect/index.ts'

// Cookie sessions (docs/sessions.md): options only, turned on through `buildApp` or the plugin.
export type { SessionConfig, SessionOptions } from './sessions/index.ts'
export type { SessionStore } from './sessions/store.ts'
export type { SessionKey } from './sessions/crypto.ts'
