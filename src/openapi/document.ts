import { ErrorSchema } from '../errors.ts'
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
  type TagRules,
} from './types.ts'
import { isRecord } from './json-schema.ts'
import { applyFieldTags } from './request-split.ts'

/**
 * The OpenAPI 3.1 document of a set of routes (docs/openapi.md; docs/decisions.md D6, D12, D13):
 * a pure function of the registry's entries and the options, so the document served is always
 * the one a fresh build would give. It knows no tag names and nothing of how routes check
 * tokens: tag meanings and descriptions come in with the options, a route's own check with its
 * `schema.access`.
 */
export const DEFAULT_TITLE = 'API Documentation'
export const DEFAULT_VERSION = '1.0.0'

export const BEARER_AUTH = {
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'JWT',
  description: 'The access token of a signed-in user: `Authorization: Bearer <ACCESS_TOKEN>`.',
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
  rules: TagRules,
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

  // Security: stated by the route (D12), else what its own check accepts, else the default rule
  // (bearer unless a tag of `rules.public` says otherwise). A route with its own check is
  // documented as it checks, whatever its tags.
  const access = isRecord(schema.access) ? schema.access : undefined
  const hasTag = (names: readonly string[] | undefined) => (names ?? []).some((t) => tags.includes(t))
  let security: JsonSchema[]
  if (Array.isArray(schema.security)) security = schema.security.filter(isRecord).map((r) => ({ ...r }))
  else if (access && Array.isArray(access.security)) security = access.security.filter(isRecord).map((r) => ({ ...r }))
  else security = hasTag(rules.public) ? [] : [{ bearerAuth: [] }]
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
  if (access) {
    const errors = isRecord(access.errors) ? access.errors : {}
    for (const [status, raw] of Object.entries(errors)) {
      const key = normaliseStatus(status)
      if (responses[key]) continue
      const e = isRecord(raw) ? raw : {}
      const response = errorResponse(key, errorRef)
      if (typeof e.description === 'string' && e.description !== '') response.description = e.description
      if (isRecord(e.headers)) response.headers = cloneJson(e.headers)
      responses[key] = response
    }
  } else {
    if (authenticated && !responses['401']) {
      responses['401'] = errorResponse('401', errorRef)
      // Documented by the tag rule, not by a check the route was seen to make: say so where it shows.
      if (!Array.isArray(schema.security) && (rules.public ?? []).length > 0)
        responses['401'].description =
          `Not authenticated: a bearer token is missing or invalid. Documented because the operation has no ${rules.public!.map((t) => `\`${t}\``).join(' or ')} tag: operations without one are documented as needing a bearer token. Tag an open route \`${rules.public![0]}\` to document it as open.`
    }
    if (hasTag(rules.restricted) && !responses['403']) responses['403'] = errorResponse('403', errorRef)
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

export function buildDocument(entries: RouteEntry[], options: DocumentOptions = {}): OpenApiDocument {
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
      const operation = buildOperation(entry, method, params, components, errorRef, shared, options.tagRules ?? {})
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
    const described = options.tagDescriptions ?? {}
    const description = given.get(name) ?? (Object.hasOwn(described, name) ? described[name] : undefined)
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
