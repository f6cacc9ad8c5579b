/**
 * The shapes the document builder reads and writes. JSON Schema is kept as plain records: the
 * builder accepts whatever a route declares (TypeBox output, hand-written schemas) and only
 * interprets the keywords it documents.
 */
export type JsonSchema = Record<string, unknown>

/** What the registry keeps of one route, in the @fastify/swagger vocabulary Fastify routes use. */
export interface RouteEntry {
  /** Upper-case methods; a multi-method route has several. */
  methods: string[]
  /** The Fastify URL with its prefix, e.g. `/auth/passkeys/:id`. */
  url: string
  schema?: RouteSchema | undefined
  config?: Record<string, unknown> | undefined
}

/** The route `schema` keys the builder reads (Fastify's own plus the @fastify/swagger ones). */
export interface RouteSchema {
  // `object`, not JsonSchema: TypeBox types are interfaces without an index signature.
  body?: object
  querystring?: object
  /** Fastify's alias of `querystring`. */
  query?: object
  params?: object
  headers?: object
  response?: Record<string | number, object>
  tags?: string[]
  summary?: string
  description?: string
  operationId?: string
  deprecated?: boolean
  security?: SecurityRequirement[]
  hide?: boolean
  /** Request media types; `application/json` when absent. */
  consumes?: string[]
  /** `false`: the body may be left out (`requestBody.required: false`). */
  bodyRequired?: boolean
  /** Named whole-request examples of the body (OpenAPI media type `examples`), in the order shown. */
  requestExamples?: Record<
    string,
    { summary?: string; description?: string; value: unknown; [ext: `x-${string}`]: unknown }
  >
  /** Response media types; `application/json` when absent. */
  produces?: string[]
  /** How the route checks its callers, when it does (documented instead of the tag rules). */
  access?: RouteAccess
  [key: string]: unknown
}

export type SecurityRequirement = Record<string, string[]>

/**
 * A hook function carrying this key documents the access check it makes: the registry reads it from
 * the hooks of a route (`onRequest`, `preParsing`, `preValidation`, `preHandler`) that states no
 * `access` of its own, so a route protected by hand documents what its check answers.
 */
export const ROUTE_ACCESS: unique symbol = Symbol.for('authgate.routeAccess')

/**
 * A route's own access check as the document shows it, stated by whatever installs the check
 * (`defineRoute` with `auth`, or a hook carrying `ROUTE_ACCESS`). The builder needs no knowledge
 * of how tokens are checked.
 */
export interface RouteAccess {
  /** The requirements the check accepts; `schema.security` still wins when the route states it. */
  security: SecurityRequirement[]
  /** Statuses the check answers with the standard error body, e.g. `{ '401': { headers } }`. */
  errors: Record<string, { description?: string; headers?: Record<string, unknown> }>
}

/**
 * What some tag names mean to the default security rule. The generic builder gives no tag a
 * meaning; authgate passes `DEFAULT_TAG_RULES` (`Public`; `Admin`, `Management`).
 */
export interface TagRules {
  /** Operations with one of these tags need no credentials unless they state their security. */
  public?: readonly string[]
  /** Operations with one of these tags may refuse a valid token: 403 is documented. */
  restricted?: readonly string[]
}

export interface InfoOptions {
  title?: string
  version?: string
  description?: string
  summary?: string
  termsOfService?: string
  contact?: { name?: string; email?: string; url?: string }
  license?: { name: string; url?: string; identifier?: string }
}

export interface ServerOption {
  url: string
  description?: string
}

/** An OpenAPI security scheme, e.g. `{ type: 'apiKey', in: 'header', name: 'X-API-Key' }`. */
export type SecuritySchemeOption = Record<string, unknown> & { type: string }

export interface TagOption {
  name: string
  description?: string
}

/** Options of the pure document builder. */
export interface DocumentOptions {
  info?: InfoOptions
  servers?: ServerOption[]
  /** Added next to `bearerAuth`; a scheme named `bearerAuth` here replaces the built-in one. */
  securitySchemes?: Record<string, SecuritySchemeOption>
  /** Tag descriptions. Tags are listed in order of first use; listed but unused ones come last. */
  tags?: TagOption[]
  /** Descriptions for tags that are used (an unused one is not listed); `tags` wins. */
  tagDescriptions?: Record<string, string>
  /** Tags with a meaning for the default security rule; none unless given. */
  tagRules?: TagRules
  /** Schemas registered with `app.addSchema`, keyed by `$id`, so `$ref: 'User#'` can be resolved. */
  sharedSchemas?: Record<string, unknown>
}

export type OpenApiDocument = Record<string, unknown> & {
  openapi: string
  info: Record<string, unknown>
  paths: Record<string, Record<string, unknown>>
  components: Record<string, Record<string, unknown>>
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

// The @fastify/swagger keys a route schema may carry, so typed routes can state them.
declare module 'fastify' {
  interface FastifySchema {
    tags?: readonly string[]
    summary?: string
    description?: string
    operationId?: string
    deprecated?: boolean
    security?: ReadonlyArray<Record<string, readonly string[]>>
    hide?: boolean
    consumes?: readonly string[]
    produces?: readonly string[]
    bodyRequired?: boolean
    requestExamples?: Readonly<Record<string, { summary?: string; description?: string; value: unknown }>>
    access?: {
      security: ReadonlyArray<Record<string, readonly string[]>>
      errors: Readonly<Record<string, { description?: string; headers?: Readonly<Record<string, unknown>> }>>
    }
  }
}
