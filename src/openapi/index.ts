// The OpenAPI generator and the route recorder (re-exported by src/index.ts).
export { createRegistry, type RouteRegistry } from './registry.ts'
export { buildDocument, DEFAULT_TITLE, DEFAULT_VERSION, BEARER_AUTH } from './document.ts'
export { DEFAULT_TAG_RULES } from './conventions.ts'
export { toOpenApi30 } from './openapi30.ts'
export { splitRequestSchema } from './request-split.ts'
export { assignOperationIds } from './operation-ids.ts'
export type {
  DocumentOptions,
  InfoOptions,
  ServerOption,
  SecuritySchemeOption,
  TagOption,
  TagRules,
  RouteAccess,
  RouteEntry,
  RouteSchema,
  OpenApiDocument,
} from './types.ts'
