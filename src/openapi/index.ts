// The OpenAPI part of authgate's public API (re-exported by src/index.ts).
export { createRegistry, type RouteRegistry } from './registry.ts'
export {
  buildOpenApiDocument,
  DEFAULT_TITLE,
  DEFAULT_VERSION,
  DEFAULT_TAG_DESCRIPTIONS,
  BEARER_AUTH,
} from './document.ts'
export { toOpenApi30 } from './openapi30.ts'
export { registerDocs, type RegisterDocsOptions, type DocsRoutes } from './register-docs.ts'
export { loadOpenApiConfig, resolveOpenApiConfig, type OpenApiOptions, type ResolvedOpenApiConfig } from './config.ts'
export {
  defineRoute,
  inPath,
  inQuery,
  inHeader,
  inForm,
  type ExplicitResponse,
  type RouteDefinition,
} from './define-route.ts'
export { withRules, type Rules } from './rules.ts'
export { splitRequestSchema } from './request-split.ts'
export { assignOperationIds } from './operation-ids.ts'
export type {
  DocumentOptions,
  InfoOptions,
  ServerOption,
  SecuritySchemeOption,
  TagOption,
  RouteEntry,
  RouteSchema,
  OpenApiDocument,
} from './types.ts'
