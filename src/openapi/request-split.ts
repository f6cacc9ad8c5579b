import type { JsonSchema } from './types.ts'
import { isRecord, mergeObjectSchemas } from './json-schema.ts'

/**
 * The single-request-type model: one request type whose fields are tagged `path`, `query`, `header`
 * or `form` (the JSON Schema property option `in`, e.g. `Type.String({ in: 'query' })`), the
 * untagged fields forming the JSON body. Fastify validates each part separately, so the type is
 * split into `params`, `querystring`, `headers`, `body` (JSON fields) and `form` (form fields).
 * The `in` option is removed: Ajv in strict mode rejects unknown keywords.
 */
export const FIELD_LOCATIONS = ['path', 'query', 'header', 'form', 'body'] as const
export type FieldLocation = (typeof FIELD_LOCATIONS)[number]

export interface SplitRequest {
  params?: JsonSchema
  querystring?: JsonSchema
  headers?: JsonSchema
  /** JSON body: the untagged fields (or those tagged `body`). Absent when there are none. */
  body?: JsonSchema
  /** Form body (`application/x-www-form-urlencoded`): the fields tagged `form`. */
  form?: JsonSchema
}

const PART: Record<FieldLocation, keyof SplitRequest> = {
  path: 'params',
  query: 'querystring',
  header: 'headers',
  form: 'form',
  body: 'body',
}

/** True when some property of `schema` carries an `in` tag. */
export function hasFieldTags(schema: unknown): boolean {
  return (
    isRecord(schema) &&
    isRecord(schema.properties) &&
    Object.values(schema.properties).some((p) => isRecord(p) && typeof p.in === 'string')
  )
}

export function splitRequestSchema(schema: JsonSchema): SplitRequest {
  const properties = isRecord(schema.properties) ? schema.properties : {}
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : [])
  const parts: Partial<Record<keyof SplitRequest, { properties: Record<string, unknown>; required: string[] }>> = {}

  for (const [key, raw] of Object.entries(properties)) {
    const prop = isRecord(raw) ? raw : {}
    const location = (typeof prop.in === 'string' ? prop.in : 'body') as FieldLocation
    if (!FIELD_LOCATIONS.includes(location))
      throw new TypeError(
        `field "${key}": unknown location in: ${JSON.stringify(prop.in)} (use ${FIELD_LOCATIONS.join(', ')})`,
      )
    const { in: _in, ...clean } = prop
    const part = (parts[PART[location]] ??= { properties: {}, required: [] })
    part.properties[key] = isRecord(raw) ? clean : raw
    // Path parameters are always required: a route cannot match without them.
    if (required.has(key) || location === 'path') part.required.push(key)
  }

  const out: SplitRequest = {}
  for (const [name, part] of Object.entries(parts) as Array<
    [keyof SplitRequest, { properties: Record<string, unknown>; required: string[] }]
  >) {
    const s: JsonSchema = { type: 'object', properties: part.properties }
    if (part.required.length > 0) s.required = part.required
    if (name === 'body' || name === 'form') {
      // The body keeps the request type's name and rules; the parameters are loose by nature
      // (a client may send other query parameters and headers).
      for (const k of ['title', 'description', 'additionalProperties', 'examples'] as const)
        if (schema[k] !== undefined) s[k] = schema[k]
      if (Array.isArray(s.examples))
        s.examples = s.examples.filter(isRecord).map((e) => pick(e, Object.keys(part.properties)))
    }
    out[name] = s
  }
  return out
}

function pick(obj: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).filter(([k]) => keys.includes(k)))
}

/** The request parts of a route schema, as Fastify validates them. */
export interface RequestParts {
  params?: unknown
  querystring?: unknown
  headers?: unknown
  body?: unknown
  consumes?: string[]
}

/**
 * The one place `in`-tagged fields are split: `defineRoute` and the registry (for plain routes) both
 * call it, so what Fastify validates and what the document shows are the same parts. Parts without
 * tags are returned as they are.
 */
export function applyFieldTags<T extends RequestParts>(parts: T, where: string): T {
  if (!hasFieldTags(parts.body)) return parts
  const split = splitRequestSchema(parts.body as JsonSchema)
  if (split.body && split.form)
    throw new TypeError(
      `${where}: a request type cannot mix JSON body fields with form fields (tag them all inForm, or none)`,
    )
  const out: T = { ...parts }
  delete out.body
  const params = mergeObjectSchemas(parts.params, split.params)
  const querystring = mergeObjectSchemas(parts.querystring, split.querystring)
  const headers = mergeObjectSchemas(parts.headers, split.headers)
  const body = split.body ?? split.form
  if (params) out.params = params
  if (querystring) out.querystring = querystring
  if (headers) out.headers = headers
  if (body) out.body = body
  if (split.form && !parts.consumes) out.consumes = ['application/x-www-form-urlencoded']
  return out
}
