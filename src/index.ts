export { buildApp, serverOptions, type AuthgateOptions } from './app.ts'
export { authgate, type AuthgatePluginOptions, type AuthgateState } from './plugin.ts'
export { loadCoreConfig, resolveConfig, AuthgateConfigError, type CoreConfig, type CoreConfigInput } from './config.ts'
export { ERRORS, ErrorSchema, sendError, type ErrorCode } from './errors.ts'
export {
  AUTH_ROUTES,
  DEFAULT_RATE_LIMITED,
  enabledRoutes,
  routeName,
  type AuthRoute,
  type RouteId,
} from './auth/routes/index.ts'
export { ROUTE_GROUPS, OPTIONAL_GROUPS, type RouteGroup, type OptionalGroup } from './auth/groups.ts'
export { BACKEND_ANSWERS, type AnswerRule } from './auth/backend-answers.ts'
export { Forwarder } from './proxy/forwarder.ts'
export * from './ratelimit/index.ts'
export * from './openapi/index.ts'
export * from './routes-dsl/index.ts'
export * from './docs-server/index.ts'
export { OPENAPI_KEYWORDS, openApiAjvOptions } from './openapi/annotation-keywords.ts'
export * from './protect/index.ts'
