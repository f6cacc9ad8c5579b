/**
 * PostgREST's description of the project's tables (the Swagger 2.0 document `GET /` answers) as a
 * part of authgate's OpenAPI 3.1 document: its paths under the prefix the client uses
 * (`/rest/v1/todos`), one tag of their own, the tables' schemas and PostgREST's shared parameters
 * as components named `rest.<name>` so they cannot meet the application's. Read as PostgREST
 * (v10 to v13) writes it: `definitions`, `parameters` (row filters, `select`, `order`, `Prefer`,
 * the `body.<table>` bodies) and paths whose parameters are mostly references to them.
 */

type Json = Record<string, unknown>

/** The part merged into authgate's document. */
export interface RestDocumentPart {
  paths: Record<string, Json>
  schemas: Record<string, unknown>
  parameters: Record<string, unknown>
  requestBodies: Record<string, unknown>
  tag: { name: string; description: string }
}

export interface SwaggerConversion {
  /** Where the client reaches PostgREST (`/rest/v1`). */
  prefix: string
  /** The one tag every operation gets. */
  tag: string
}

/** The error body of PostgREST and of authgate on the REST routes. */
const ERROR_SCHEMA = 'rest.Error'
const ERROR: Json = {
  type: 'object',
  description:
    "An error: PostgREST's (`PGRST…` or a PostgreSQL SQLSTATE) or authgate's own (`no_api_key`, `over_request_rate_limit`)",
  required: ['code', 'message'],
  properties: {
    code: { type: 'string', examples: ['42501'] },
    message: { type: 'string' },
    details: { type: ['string', 'null'] },
    hint: { type: ['string', 'null'] },
  },
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'] as const

/** Keywords of a 2.0 non-body parameter that belong in its 3.1 `schema`. */
const SCHEMA_KEYWORDS = [
  'type',
  'format',
  'items',
  'enum',
  'default',
  'maximum',
  'minimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'exclusiveMaximum',
  'exclusiveMinimum',
  'multipleOf',
]

const VERBS: Record<string, string> = {
  get: 'Read',
  post: 'Insert into',
  put: 'Upsert into',
  patch: 'Update',
  delete: 'Delete from',
  head: 'Count',
  options: 'Options of',
}

function isJson(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A component name OpenAPI allows (`^[a-zA-Z0-9.\-_]+$`), prefixed. */
function componentName(name: string): string {
  return `rest.${name.replace(/[^A-Za-z0-9._-]/g, '_')}`
}

/** `#/definitions/x` → `#/components/schemas/rest.x`, deep, in a copy. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs)
  if (!isJson(value)) return value
  const out: Json = {}
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/definitions/'))
      out[k] = `#/components/schemas/${componentName(decodeURIComponent(v.slice('#/definitions/'.length)))}`
    else out[k] = rewriteRefs(v)
  }
  return out
}

function convertParameter(p: Json): Json {
  const schema: Json = {}
  for (const k of SCHEMA_KEYWORDS) if (p[k] !== undefined) schema[k] = rewriteRefs(p[k])
  if (schema.type === undefined) schema.type = 'string'
  const out: Json = { name: p.name, in: p.in }
  if (typeof p.description === 'string' && p.description !== '') out.description = p.description
  out.required = p.required === true
  out.schema = schema
  return out
}

function convertBody(p: Json, consumes: string[]): Json {
  const schema = rewriteRefs(p.schema ?? {})
  const content: Json = {}
  for (const type of consumes) content[type] = { schema }
  const out: Json = { content, required: p.required === true }
  if (typeof p.description === 'string' && p.description !== '') out.description = p.description
  return out
}

/** The table or function a path names (`/todos` → `todos`, `/rpc/add` → `add`), for summaries and ids. */
function subject(path: string): { name: string; rpc: boolean } {
  const rpc = path.startsWith('/rpc/')
  return { name: rpc ? path.slice(5) : path.slice(1), rpc }
}

function operationId(method: string, path: string, taken: Set<string>): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean)
  const base = `rest${method[0]!.toUpperCase()}${method.slice(1)}${words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}`
  let id = base
  for (let i = 2; taken.has(id); i++) id = `${base}${i}`
  taken.add(id)
  return id
}

/**
 * The part of a PostgREST Swagger 2.0 document that goes into authgate's; throws when the value is
 * not one (no `swagger: "2.0"` or no `paths`).
 */
export function convertPostgrestSwagger(swagger: unknown, options: SwaggerConversion): RestDocumentPart {
  if (!isJson(swagger) || swagger.swagger !== '2.0' || !isJson(swagger.paths))
    throw new Error('not a Swagger 2.0 document')
  const consumes = Array.isArray(swagger.consumes) ? (swagger.consumes as string[]) : ['application/json']
  const produces = Array.isArray(swagger.produces) ? (swagger.produces as string[]) : ['application/json']
  const schemas: Record<string, unknown> = { [ERROR_SCHEMA]: ERROR }
  for (const [name, schema] of Object.entries(isJson(swagger.definitions) ? swagger.definitions : {}))
    schemas[componentName(name)] = rewriteRefs(schema)
  const parameters: Record<string, unknown> = {}
  const requestBodies: Record<string, unknown> = {}
  for (const [name, p] of Object.entries(isJson(swagger.parameters) ? swagger.parameters : {})) {
    if (!isJson(p)) continue
    if (p.in === 'body') requestBodies[componentName(name)] = convertBody(p, consumes)
    else parameters[componentName(name)] = convertParameter(p)
  }

  const paths: Record<string, Json> = {}
  const taken = new Set<string>()
  for (const [path, item] of Object.entries(swagger.paths)) {
    // `/` is this description itself (for the service key only): not an operation of the project.
    if (path === '/' || !path.startsWith('/') || !isJson(item)) continue
    const converted: Json = {}
    for (const method of METHODS) {
      const op = item[method]
      if (!isJson(op)) continue
      const out: Json = { tags: [options.tag] }
      const { name, rpc } = subject(path)
      out.summary =
        typeof op.summary === 'string' && op.summary !== ''
          ? op.summary
          : rpc
            ? `Call ${name}`
            : `${VERBS[method]} ${name}`
      if (typeof op.description === 'string' && op.description !== '') out.description = op.description
      out.operationId = operationId(method, path, taken)
      const params: Json[] = []
      const seen = new Set<string>()
      for (const p of Array.isArray(op.parameters) ? op.parameters : []) {
        if (!isJson(p)) continue
        const ref = typeof p.$ref === 'string' ? p.$ref : undefined
        const resolved = ref?.startsWith('#/parameters/')
          ? (swagger.parameters as Json | undefined)?.[decodeURIComponent(ref.slice('#/parameters/'.length))]
          : p
        if (!isJson(resolved)) continue
        const local = ref?.slice('#/parameters/'.length)
        if (resolved.in === 'body') {
          out.requestBody =
            local !== undefined
              ? { $ref: `#/components/requestBodies/${componentName(decodeURIComponent(local))}` }
              : convertBody(resolved, consumes)
          continue
        }
        // One parameter per name and place (PostgREST may list two `Prefer` headers).
        const key = `${String(resolved.in)}:${String(resolved.name).toLowerCase()}`
        if (seen.has(key)) continue
        seen.add(key)
        params.push(
          local !== undefined
            ? { $ref: `#/components/parameters/${componentName(decodeURIComponent(local))}` }
            : convertParameter(resolved),
        )
      }
      if (params.length > 0) out.parameters = params
      const responses: Json = {}
      for (const [status, r] of Object.entries(isJson(op.responses) ? op.responses : {})) {
        if (!isJson(r)) continue
        const response: Json = { description: typeof r.description === 'string' ? r.description : status }
        if (r.schema !== undefined) {
          const content: Json = {}
          for (const type of produces) content[type] = { schema: rewriteRefs(r.schema) }
          response.content = content
        }
        responses[status] = response
      }
      if (Object.keys(responses).length === 0) responses.default = { description: 'PostgREST answer' }
      // PostgREST's errors and authgate's own refusals on the route (no key, a rate limit, an
      // unreachable PostgREST) share the shape: `code` and `message`, PostgREST adding the rest.
      for (const [range, description] of [
        [
          '4XX',
          "Refused: PostgREST's error (a filter it cannot read, a row-level security denial) or authgate's (no or unknown key, rate limit)",
        ],
        ['5XX', 'PostgREST failed, or authgate could not reach it (502) or had no answer in time (504)'],
      ] as const)
        responses[range] ??= {
          description,
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${ERROR_SCHEMA}` } } },
        }
      out.responses = responses
      // The user's access token when there is one; the key alone (or authgate's configured one) otherwise.
      out.security = [{ bearerAuth: [] }, {}]
      converted[method] = out
    }
    if (Object.keys(converted).length > 0) paths[options.prefix + path] = converted
  }
  const info = isJson(swagger.info) ? swagger.info : {}
  const version = typeof info.version === 'string' ? ` ${info.version}` : ''
  return {
    paths,
    schemas,
    parameters,
    requestBodies,
    tag: {
      name: options.tag,
      description: `The project's tables and functions as PostgREST${version} describes them to the service role, under \`${options.prefix}\`: filters, \`select\`, \`order\` and \`Prefer\` as PostgREST reads them.`,
    },
  }
}

/** authgate's document with the REST part merged in: its paths, components and tag added, nothing replaced. */
export function mergeRestPart<D extends { paths: Record<string, unknown>; components: Record<string, unknown> }>(
  doc: D,
  part: RestDocumentPart,
): D {
  const components = { ...doc.components } as Record<string, Record<string, unknown>>
  const add = (kind: string, items: Record<string, unknown>) => {
    if (Object.keys(items).length === 0) return
    components[kind] = { ...components[kind], ...items }
  }
  add('schemas', part.schemas)
  add('parameters', part.parameters)
  add('requestBodies', part.requestBodies)
  components.securitySchemes = {
    bearerAuth: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'The access token of a signed-in user: `Authorization: Bearer <ACCESS_TOKEN>`.',
    },
    ...components.securitySchemes,
  }
  const paths = { ...doc.paths }
  for (const [path, item] of Object.entries(part.paths)) if (!(path in paths)) paths[path] = item
  const withTags = doc as D & { tags?: Array<{ name: string }> }
  const tags = [...(withTags.tags ?? [])]
  if (!tags.some((t) => t.name === part.tag.name)) tags.push(part.tag)
  return { ...doc, paths, components, tags }
}
