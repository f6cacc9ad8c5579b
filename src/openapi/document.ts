import { ErrorSchema } from '../errors.ts'
import { canForbid, routeAuthOf } from '../protect/requirement.ts'
import { ComponentCollector, cloneJson } from './components.ts'
import { addGeneratedExamples } from './examples.ts'
import { assignOperationIds, type OperationKey } from './operation-ids.ts'
import { buildParameters } from './parameters.ts'
import { toOpenApiPath } from './path.ts'
import { buildResponse, compareStatus, errorResponse, normaliseStatus } from './responses.ts'
import {
  HTTP_METHODS,
  type DocumentOptions,
  type JsonSchema,
  type OpenApiDocument,
  type RouteEntry,
  type RouteSchema,
} from './types.ts'
import { isRecord } from './json-schema.ts'
import { applyFieldTags } from './request-split.ts'

/**
 * The OpenAPI 3.1 document of a set of routes (docs/openapi.md; docs/decisions.md D6, D12, D13):
 * a pure function of the registry's entries and the options, so the document served is always
 * the one a fresh build would give.
 */
export const DEFAULT_TITLE = 'API Documentation'
export const DEFAULT_VERSION = '1.0.0'

export const DEFAULT_TAG_DESCRIPTIONS: Record<string, string> = {
  Auth: 'Supabase Auth core endpoints: health, settings, sign-up, sign-in and tokens, one-time codes, verification, recovery, the signed-in user, and the redirect flows of external providers.',
  OAuth:
    'The OAuth 2.1 authorization server of Supabase Auth: discovery metadata, keys, authorization, tokens, dynamic client registration and userinfo.',
  Passkey: 'Passkeys (WebAuthn): registering, signing in with, listing, renaming and deleting passkeys.',
  Public: 'Operations that need no credentials.',
  Admin: 'Administrative operations: a valid token is not enough, the caller needs the right role.',
  Management: 'Management operations: a valid token is not enough, the caller needs the right role.',
}

export const BEARER_AUTH = {
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'JWT',
  description: 'The access token of a signed-in user: `Authorization: Bearer <ACCESS_TOKEN>`.',
} as const

/** The `WWW-Authenticate` header of a protected route's 401 and 403. */
const CHALLENGE = {
  'WWW-Authenticate': {
    description:
      'RFC 6750 bearer challenge: `error` and `error_description` when a token was refused, and `resource_metadata` (RFC 9728) naming where to get one.',
    schema: { type: 'string' },
    example: 'Bearer error="invalid_token", error_description="the access token has expired"',
  },
} as const

// Methods whose `body` schema is documented as a requestBody (OpenAPI gives DELETE's body no defined meaning).
const REQUEST_BODY_METHODS = new Set(['post', 'put', 'patch'])
const FORM = 'application/x-www-form-urlencoded'

interface PendingOperation {
  path: string
  method: string
  operation: JsonSchema
  key: OperationKey
}

/** Resolves `{ $ref: 'Id#' }` to a schema added with `app.addSchema`, for parameter objects. */
function resolveShared(schema: unknown, shared: Record<string, unknown>): JsonSchema | undefined {
  if (!isRecord(schema)) return undefined
  if (typeof schema.$ref === 'string') {
    const target = shared[schema.$ref.replace(/#.*$/, '')]
    return isRecord(target) ? target : undefined
  }
  return schema
}

function requestBody(
  body: JsonSchema | undefined,
  form: JsonSchema | undefined,
  schema: RouteSchema,
  components: ComponentCollector,
): JsonSchema | undefined {
  const consumes = schema.consumes
  const content: Record<string, JsonSchema> = {}
  if (body) {
    if (isRecord(body.content)) {
      // Fastify's own per-content-type form: { content: { 'application/json': { schema } } }.
      for (const [type, m] of Object.entries(body.content))
        if (isRecord(m)) content[type] = { schema: components.convert(m.schema) }
    } else {
      const types = (consumes && consumes.length > 0 ? consumes : ['application/json']).filter(
        (t) => !(form && t === FORM),
      )
      const schema = components.convert(body)
      for (const type of types) content[type] = { schema }
    }
  }
  if (form) content[FORM] = { schema: components.convert(form) }
  if (Object.keys(content).length === 0) return undefined
  const examples = isRecord(schema.requestExamples) ? schema.requestExamples : undefined
  if (examples && Object.keys(examples).length > 0)
    for (const media of Object.values(content)) media.examples = cloneJson(examples)
  const out: JsonSchema = {}
  if (body && typeof body.description === 'string') out.description = body.description
  out.required = schema.bodyRequired !== false
  out.content = content
  return out
}

function buildOperation(
  entry: RouteEntry,
  method: string,
  pathParams: ReturnType<typeof toOpenApiPath>['params'],
  components: ComponentCollector,
  errorRef: JsonSchema,
  shared: Record<string, unknown>,
): JsonSchema {
  // Idempotent: routes seen by the registry are split already, entries built by hand may not be.
  const schema: RouteSchema = applyFieldTags(entry.schema ?? {}, entry.url)
  const tags = Array.isArray(schema.tags) ? schema.tags.filter((t): t is string => typeof t === 'string') : []

  const params = resolveShared(schema.params, shared)
  const querystring = resolveShared(schema.querystring ?? schema.query, shared)
  const headers = resolveShared(schema.headers, shared)
  const body = resolveShared(schema.body, shared) ?? (isRecord(schema.body) ? schema.body : undefined)
  const form = body && schema.consumes?.length === 1 && schema.consumes[0] === FORM ? body : undefined

  const op: JsonSchema = {}
  if (tags.length > 0) op.tags = tags
  if (typeof schema.summary === 'string') op.summary = schema.summary
  if (typeof schema.description === 'string') op.description = schema.description
  if (schema.deprecated === true) op.deprecated = true

  const parameters = buildParameters({ pathParams, params, querystring, headers }, components)
  if (parameters.length > 0) op.parameters = parameters

  if (REQUEST_BODY_METHODS.has(method)) {
    const rb = requestBody(body, form, schema, components)
    if (rb) op.requestBody = rb
  }

  // Security: stated by the route (D12) or the default rule (bearer unless tagged `Public`).
  // A route that checks tokens (`auth`) is documented as it checks: optional auth lists the empty
  // requirement too, and 403 appears only where a valid token can still be refused.
  const auth = routeAuthOf(entry.config)
  let security: JsonSchema[]
  if (Array.isArray(schema.security)) security = schema.security.filter(isRecord).map((r) => ({ ...r }))
  else if (auth) security = auth.mode === 'optional' ? [{}, { bearerAuth: [] }] : [{ bearerAuth: [] }]
  else security = tags.includes('Public') ? [] : [{ bearerAuth: [] }]
  const authenticated = security.some((r) => Object.keys(r).length > 0)

  const produces = Array.isArray(schema.produces) && schema.produces.length > 0 ? schema.produces : ['application/json']
  const responses: Record<string, JsonSchema> = {}
  const declared = isRecord(schema.response) ? schema.response : {}
  for (const [key, value] of Object.entries(declared))
    responses[normaliseStatus(key)] = buildResponse(normaliseStatus(key), value, produces, components)

  // 200/400/500 always, except that a route declaring another success status does
  // not also get an invented 200 (D6: the document lists the real statuses).
  const declaresSuccess = Object.keys(responses).some((s) => /^[23]/.test(s))
  if (!declaresSuccess) responses['200'] = { description: 'OK' }
  if (!responses['400']) responses['400'] = errorResponse('400', errorRef)
  if (auth) {
    if (!responses['401']) responses['401'] = { ...errorResponse('401', errorRef), headers: { ...CHALLENGE } }
    if (canForbid(auth) && !responses['403'])
      responses['403'] = { ...errorResponse('403', errorRef), headers: { ...CHALLENGE } }
  } else {
    if (authenticated && !responses['401']) responses['401'] = errorResponse('401', errorRef)
    if ((tags.includes('Admin') || tags.includes('Management')) && !responses['403'])
      responses['403'] = errorResponse('403', errorRef)
  }
  if (!responses['500']) responses['500'] = errorResponse('500', errorRef)
  op.responses = Object.fromEntries(
    Object.keys(responses)
      .sort(compareStatus)
      .map((s) => [s, responses[s]!]),
  )

  op.security = security
  for (const [k, v] of Object.entries(schema)) if (k.startsWith('x-')) op[k] = v
  return op
}

function addExamplesToContent(container: unknown): void {
  if (!isRecord(container) || !isRecord(container.content)) return
  for (const media of Object.values(container.content)) if (isRecord(media)) addGeneratedExamples(media.schema)
}

export function buildOpenApiDocument(entries: RouteEntry[], options: DocumentOptions = {}): OpenApiDocument {
  const shared = options.sharedSchemas ?? {}
  const components = new ComponentCollector(shared)
  const errorRef = components.reference(ErrorSchema as unknown as JsonSchema)

  const pending: PendingOperation[] = []
  const seen = new Set<string>()
  const tagOrder: string[] = []
  for (const entry of entries) {
    const { path, params } = toOpenApiPath(entry.url)
    for (const m of entry.methods) {
      const method = m.toLowerCase()
      if (!(HTTP_METHODS as readonly string[]).includes(method)) continue
      // Two routes may share method and path under different Fastify constraints; the first is documented.
      if (seen.has(`${method} ${path}`)) continue
      seen.add(`${method} ${path}`)
      const operation = buildOperation(entry, method, params, components, errorRef, shared)
      for (const t of (operation.tags as string[] | undefined) ?? []) if (!tagOrder.includes(t)) tagOrder.push(t)
      const explicit =
        typeof entry.schema?.operationId === 'string' && entry.schema.operationId !== ''
          ? entry.schema.operationId
          : undefined
      pending.push({ path, method, operation, key: { method, path, explicit } })
    }
  }

  const ids = assignOperationIds(pending.map((p) => p.key))
  const paths: Record<string, Record<string, unknown>> = {}
  pending.forEach((p, i) => {
    const { tags, summary, description, deprecated, ...rest } = p.operation
    const op: JsonSchema = {}
    if (tags !== undefined) op.tags = tags
    if (summary !== undefined) op.summary = summary
    if (description !== undefined) op.description = description
    op.operationId = ids[i]
    if (deprecated !== undefined) op.deprecated = deprecated
    Object.assign(op, rest)
    addExamplesToContent(op.requestBody)
    for (const r of Object.values(isRecord(op.responses) ? op.responses : {})) addExamplesToContent(r)
    ;(paths[p.path] ??= {})[p.method] = op
  })
  for (const schema of Object.values(components.schemas)) addGeneratedExamples(schema)

  const info: Record<string, unknown> = {
    title: options.info?.title || DEFAULT_TITLE,
    version: options.info?.version || DEFAULT_VERSION,
  }
  for (const k of ['summary', 'description', 'termsOfService'] as const)
    if (options.info?.[k]) info[k] = options.info[k]
  if (options.info?.contact) info.contact = { ...options.info.contact }
  if (options.info?.license) info.license = { ...options.info.license }

  // Tags in order of first use (the mounted auth routes come first), then any listed but unused.
  const given = new Map((options.tags ?? []).map((t) => [t.name, t.description]))
  const names = [...tagOrder, ...[...given.keys()].filter((n) => !tagOrder.includes(n))]
  const tags = names.map((name) => {
    const description = given.get(name) ?? DEFAULT_TAG_DESCRIPTIONS[name]
    return description ? { name, description } : { name }
  })

  const doc: OpenApiDocument = {
    openapi: '3.1.0',
    info,
    // Servers are always listed (linters require it); `/` is what a missing list means anyway.
    servers:
      options.servers && options.servers.length > 0
        ? options.servers.map((s) => ({ ...s }))
        : [{ url: '/', description: 'This server' }],
    paths,
    components: {
      schemas: components.schemas,
      securitySchemes: { bearerAuth: { ...BEARER_AUTH }, ...structuredClone(options.securitySchemes ?? {}) },
    },
  }
  if (tags.length > 0) doc.tags = tags
  return doc
}
