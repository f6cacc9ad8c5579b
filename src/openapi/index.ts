// The OpenAPI generator and the route recorder (re-exported by src/index.ts).
export { createRegistry, type RouteRegistry } from './registry.ts'
export {
  buildOpenApiDocument,
  DEFAULT_TITLE,
  DEFAULT_VERSION,
  DEFAULT_TAG_DESCRIPTIONS,
  BEARER_AUTH,
} from './document.ts'
export { toOpenApi30 } from './openapi30.ts'
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
