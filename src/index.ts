export { buildApp, serverOptions, type AuthgateOptions } from './app.ts'
export {
  authgate,
  resolveConfig,
  defaultRateLimitConfig,
  type AuthgatePluginOptions,
  type AuthgateState,
} from './plugin.ts'
export { loadCoreConfig, ConfigError, type CoreConfig } from './config.ts'
export { ERRORS, ErrorSchema, sendError, type ErrorCode } from './errors.ts'
export { AUTH_ROUTES, DEFAULT_RATE_LIMITED, enabledRoutes, routeName, type AuthRoute } from './auth/routes.ts'
export { ROUTE_GROUPS, OPTIONAL_GROUPS, type RouteGroup, type OptionalGroup } from './auth/groups.ts'
export { BACKEND_ANSWERS, type AnswerRule } from './auth/backend-answers.ts'
export { Forwarder } from './proxy/forwarder.ts'
export * from './ratelimit/index.ts'
export * from './openapi/index.ts'
export { OPENAPI_KEYWORDS, openApiAjvOptions } from './openapi/annotation-keywords.ts'
export * from './protect/index.ts'
