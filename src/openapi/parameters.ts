import type { ComponentCollector } from './components.ts'
import { exampleFor } from './examples.ts'
import type { PathParam } from './path.ts'
import type { JsonSchema } from './types.ts'
import { isRecord } from './json-schema.ts'

/**
 * Path, query and header parameters from a route's `params`, `querystring` and `headers` schemas.
 * Path parameters are always required (a route cannot match without them), query and header
 * parameters when the schema requires them. The field's description, example (declared or
 * generated) and deprecation move to the parameter.
 */

// OpenAPI 3.x: header parameters named Accept, Content-Type or Authorization "SHALL be ignored";
// they are described by the media types and the security requirement instead.
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization'])

function objectParts(schema: JsonSchema | undefined): { properties: Record<string, unknown>; required: string[] } {
  if (!schema) return { properties: {}, required: [] }
  return {
    properties: isRecord(schema.properties) ? schema.properties : {},
    required: Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [],
  }
}

function parameter(
  location: 'path' | 'query' | 'header',
  name: string,
  field: unknown,
  required: boolean,
  components: ComponentCollector,
): JsonSchema {
  const source = isRecord(field) ? field : {}
  const { description, deprecated, example: _example, examples: _examples, in: _in, ...rest } = source
  const param: JsonSchema = { name, in: location }
  if (typeof description === 'string') param.description = description
  param.required = required
  if (deprecated === true) param.deprecated = true
  param.schema = components.convert(Object.keys(rest).length > 0 ? rest : { type: 'string' }, false)
  const example = exampleFor(source, name)
  if (example !== undefined) param.example = example
  return param
}

export interface ParameterSources {
  pathParams: PathParam[]
  params?: JsonSchema | undefined
  querystring?: JsonSchema | undefined
  headers?: JsonSchema | undefined
}

export function buildParameters(src: ParameterSources, components: ComponentCollector): JsonSchema[] {
  const out: JsonSchema[] = []
  const params = objectParts(src.params)
  for (const p of src.pathParams) {
    const field = params.properties[p.key] ?? params.properties[p.name]
    const fallback: JsonSchema = p.pattern === undefined ? { type: 'string' } : { type: 'string', pattern: p.pattern }
    out.push(parameter('path', p.name, field ?? fallback, true, components))
  }
  const query = objectParts(src.querystring)
  for (const [name, field] of Object.entries(query.properties))
    out.push(parameter('query', name, field, query.required.includes(name), components))
  const headers = objectParts(src.headers)
  const requiredHeaders = new Set(headers.required.map((h) => h.toLowerCase()))
  for (const [name, field] of Object.entries(headers.properties)) {
    if (IGNORED_HEADERS.has(name.toLowerCase())) continue
    out.push(parameter('header', name, field, requiredHeaders.has(name.toLowerCase()), components))
  }
  return out
}
