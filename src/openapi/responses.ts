import type { ComponentCollector } from './components.ts'
import { cloneJson } from './components.ts'
import type { JsonSchema } from './types.ts'
import { isRecord } from './json-schema.ts'

/**
 * Response objects from a route's `schema.response` entries (the @fastify/swagger convention:
 * `{ description, headers, ...jsonSchema }` or `{ description, content: { type: { schema } } }`).
 *
 * - An entry with an `example` and no schema of its own is an explicit response:
 *   its schema is derived from the example's type.
 * - 204, 304 and `type: 'null'` entries have no body; an entry with neither schema nor example
 *   documents only its status, description and headers (a redirect, say).
 * - Redirects document `Location` even when the entry does not.
 */

const REASONS: Record<string, string> = {
  '200': 'OK',
  '201': 'Created',
  '202': 'Accepted',
  '204': 'No Content',
  '301': 'Moved Permanently',
  '302': 'Found (redirect)',
  '303': 'See Other (redirect)',
  '304': 'Not Modified',
  '307': 'Temporary Redirect',
  '308': 'Permanent Redirect',
  '400': 'Bad Request: the request failed validation or its body is not valid JSON',
  '401': 'Unauthorized: a valid bearer token is required',
  '403': 'Forbidden: the caller may not perform this operation',
  '404': 'Not Found',
  '409': 'Conflict',
  '413': 'Request body too large',
  '415': 'Unsupported Content-Type',
  '422': 'Unprocessable Entity',
  '429': 'Too Many Requests',
  '500': 'Internal Server Error',
  '502': 'Bad Gateway: the backend could not be reached',
  '503': 'Service Unavailable',
  '504': 'Gateway Timeout: the backend did not answer in time',
  default: 'Unexpected response',
}

export function defaultDescription(status: string): string {
  return (
    REASONS[status] ??
    (status.startsWith('2')
      ? 'Success'
      : status.startsWith('3')
        ? 'Redirect'
        : status.startsWith('4')
          ? 'Client error'
          : 'Server error')
  )
}

/** `200`, `2xx` → `2XX`, `default`. */
export function normaliseStatus(key: string): string {
  return /^[1-5]xx$/i.test(key) ? key.toUpperCase() : key
}

const REDIRECTS = new Set(['301', '302', '303', '307', '308', '3XX'])

/** Keywords that make an entry a schema rather than only a description of the response. */
const SCHEMA_KEYWORDS = [
  'type',
  'properties',
  'items',
  'prefixItems',
  '$ref',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  'enum',
  'const',
  'additionalProperties',
  'patternProperties',
  'required',
  'format',
  'pattern',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
]

function hasSchema(s: JsonSchema): boolean {
  return SCHEMA_KEYWORDS.some((k) => s[k] !== undefined)
}

/** A JSON Schema for a literal example value: its type, recursively, each field showing its value. */
export function schemaFromExample(value: unknown): JsonSchema {
  if (value === null) return { type: 'null' }
  if (Array.isArray(value)) return { type: 'array', items: value.length > 0 ? schemaFromExample(value[0]) : {} }
  if (isRecord(value)) {
    return {
      type: 'object',
      properties: Object.fromEntries(Object.entries(value).map(([k, v]) => [k, schemaFromExample(v)])),
    }
  }
  const type =
    typeof value === 'number'
      ? Number.isInteger(value)
        ? 'integer'
        : 'number'
      : typeof value === 'boolean'
        ? 'boolean'
        : 'string'
  return { type, examples: [value] }
}

function headerObject(value: unknown, components: ComponentCollector): JsonSchema {
  if (!isRecord(value)) return { schema: { type: 'string' } }
  // Either an OpenAPI header object ({ description, schema }) or a bare JSON Schema.
  if (isRecord(value.schema)) {
    return { ...cloneJson(value), schema: components.convert(value.schema, false) }
  }
  const { description, required, deprecated, example, ...schema } = value
  const out: JsonSchema = {}
  if (typeof description === 'string') out.description = description
  if (required === true) out.required = true
  if (deprecated === true) out.deprecated = true
  out.schema = components.convert(Object.keys(schema).length > 0 ? schema : { type: 'string' }, false)
  if (example !== undefined) out.example = example
  return out
}

export function buildResponse(
  status: string,
  entry: unknown,
  produces: string[],
  components: ComponentCollector,
): JsonSchema {
  const e = isRecord(entry) ? entry : {}
  const { description, headers, content, example, ...rest } = e
  const response: JsonSchema = {
    description: typeof description === 'string' && description !== '' ? description : defaultDescription(status),
  }

  const headerMap: Record<string, JsonSchema> = {}
  if (isRecord(headers)) for (const [name, h] of Object.entries(headers)) headerMap[name] = headerObject(h, components)
  if (REDIRECTS.has(status) && !Object.keys(headerMap).some((h) => h.toLowerCase() === 'location')) {
    headerMap.Location = {
      description: 'Where the client is sent',
      schema: { type: 'string', format: 'uri-reference' },
    }
  }
  if (Object.keys(headerMap).length > 0) response.headers = headerMap

  if (isRecord(content)) {
    const media: Record<string, JsonSchema> = {}
    for (const [type, m] of Object.entries(content)) {
      if (!isRecord(m)) continue
      const mo: JsonSchema = {}
      if (m.schema !== undefined) mo.schema = components.convert(m.schema)
      if (m.example !== undefined) mo.example = cloneJson(m.example)
      if (isRecord(m.examples)) mo.examples = cloneJson(m.examples)
      media[type] = mo
    }
    if (Object.keys(media).length > 0) response.content = media
    return response
  }

  if (status === '204' || status === '304' || rest.type === 'null') return response
  const declared =
    example !== undefined
      ? example
      : Array.isArray(rest.examples) && rest.examples.length > 0
        ? rest.examples[0]
        : undefined
  let schema: JsonSchema
  if (hasSchema(rest)) schema = components.convert(rest)
  else if (declared !== undefined) schema = schemaFromExample(declared)
  else return response

  const mediaObject: JsonSchema = { schema }
  if (example !== undefined) mediaObject.example = cloneJson(example)
  response.content = Object.fromEntries(produces.map((type) => [type, mediaObject]))
  return response
}

/** The standard error body response (400, 401, 403, 500). */
export function errorResponse(status: string, errorRef: JsonSchema): JsonSchema {
  return { description: defaultDescription(status), content: { 'application/json': { schema: errorRef } } }
}

/** Sorts status keys: numbers ascending, then ranges, then `default`. */
export function compareStatus(a: string, b: string): number {
  const rank = (s: string) => (s === 'default' ? 1000 : /^\dXX$/.test(s) ? Number(s[0]) * 100 + 99.5 : Number(s))
  return rank(a) - rank(b)
}
