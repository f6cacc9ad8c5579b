import type { JsonSchema, OpenApiDocument } from './types.ts'
import { isRecord } from './json-schema.ts'

/**
 * The same document as OpenAPI 3.0.3, for code generators that do not read 3.1 (docs/decisions.md,
 * D13). A pure function: the 3.1 document is not modified.
 *
 * Schema differences handled (3.1 uses full JSON Schema 2020-12, 3.0 an extended subset):
 * `type` lists and `null` members of `anyOf`/`oneOf` → `nullable`; `examples` → `example`;
 * `const` → `enum`; numeric `exclusiveMinimum`/`exclusiveMaximum` → boolean form; `$ref` with
 * siblings (ignored by 3.0) → `allOf`; `patternProperties` → `additionalProperties`;
 * `prefixItems` → `items`; `contentEncoding: base64` → `format: byte`; keywords 3.0 does not
 * know are dropped. Document level: `info.summary`, `license.identifier`, `webhooks`,
 * `jsonSchemaDialect`, `components.pathItems` and `mutualTLS` schemes are dropped.
 */

const DROPPED = new Set([
  '$schema',
  '$id',
  '$anchor',
  '$defs',
  'definitions',
  '$comment',
  '$dynamicRef',
  '$dynamicAnchor',
  '$vocabulary',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  'propertyNames',
  'contentSchema',
  'contentMediaType',
  'contentEncoding',
  'examples',
  'const',
  'patternProperties',
  'prefixItems',
  'exclusiveMinimum',
  'exclusiveMaximum',
])

const isNullSchema = (s: unknown) =>
  isRecord(s) && (s.type === 'null' || (Array.isArray(s.type) && s.type.length === 1 && s.type[0] === 'null'))

export function schemaTo30(input: unknown): JsonSchema {
  if (input === true || input === undefined) return {}
  if (input === false) return { not: {} }
  if (!isRecord(input)) return {}

  if (typeof input.$ref === 'string') {
    const { $ref, ...siblings } = input
    if (Object.keys(siblings).length === 0) return { $ref }
    // 3.0 ignores everything beside a $ref; allOf keeps the siblings meaningful.
    return { allOf: [{ $ref }], ...schemaTo30(siblings) }
  }

  const out: JsonSchema = {}
  let nullable = input.nullable === true

  for (const [key, value] of Object.entries(input)) {
    if (DROPPED.has(key) || key === 'type' || key === 'nullable') continue
    switch (key) {
      case 'properties':
        out.properties = isRecord(value)
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, schemaTo30(v)]))
          : {}
        break
      case 'additionalProperties':
        out.additionalProperties = typeof value === 'boolean' ? value : schemaTo30(value)
        break
      case 'items':
        out.items = Array.isArray(value) ? { anyOf: value.map(schemaTo30) } : schemaTo30(value)
        break
      case 'not':
        out.not = schemaTo30(value)
        break
      case 'allOf':
      case 'anyOf':
      case 'oneOf': {
        const members = Array.isArray(value) ? value : []
        const rest = members.filter((m) => !isNullSchema(m))
        if (rest.length < members.length) nullable = true
        if (rest.length === 0) break
        out[key] = rest.map(schemaTo30)
        break
      }
      default:
        out[key] = value
    }
  }

  // A single non-null alternative left after removing `null` is the schema itself.
  for (const key of ['anyOf', 'oneOf'] as const) {
    const members = out[key]
    if (Array.isArray(members) && members.length === 1) {
      const only = members[0] as JsonSchema
      delete out[key]
      if (typeof only.$ref === 'string') out.allOf = [...(Array.isArray(out.allOf) ? out.allOf : []), only]
      else for (const [k, v] of Object.entries(only)) if (out[k] === undefined) out[k] = v
    }
  }

  const types =
    typeof input.type === 'string'
      ? [input.type]
      : Array.isArray(input.type)
        ? input.type.filter((t): t is string => typeof t === 'string')
        : []
  if (types.includes('null')) nullable = true
  const concrete = types.filter((t) => t !== 'null')
  if (concrete.length === 1) out.type = concrete[0]
  else if (concrete.length > 1)
    out.anyOf = [...(Array.isArray(out.anyOf) ? out.anyOf : []), ...concrete.map((t) => ({ type: t }))]
  else if (types.length > 0 && out.enum === undefined && out.type === undefined) out.enum = [null] // `type: 'null'` alone

  if ('const' in input && out.enum === undefined) out.enum = [input.const]
  if (Array.isArray(input.examples) && input.examples.length > 0 && out.example === undefined)
    out.example = input.examples[0]

  if (typeof input.exclusiveMinimum === 'number') {
    if (typeof input.minimum !== 'number' || input.exclusiveMinimum >= input.minimum) {
      out.minimum = input.exclusiveMinimum
      out.exclusiveMinimum = true
    }
  } else if (input.exclusiveMinimum === true) out.exclusiveMinimum = true
  if (typeof input.exclusiveMaximum === 'number') {
    if (typeof input.maximum !== 'number' || input.exclusiveMaximum <= input.maximum) {
      out.maximum = input.exclusiveMaximum
      out.exclusiveMaximum = true
    }
  } else if (input.exclusiveMaximum === true) out.exclusiveMaximum = true

  if (isRecord(input.patternProperties) && out.additionalProperties === undefined) {
    const values = Object.values(input.patternProperties).map(schemaTo30)
    out.additionalProperties = values.length === 1 ? values[0]! : { anyOf: values }
  }
  if (Array.isArray(input.prefixItems) && out.items === undefined)
    out.items = { anyOf: input.prefixItems.map(schemaTo30) }
  if (input.contentEncoding === 'base64' && out.format === undefined) out.format = 'byte'
  if (out.type === 'array' && out.items === undefined) out.items = {}
  if (nullable) out.nullable = true
  return out
}

function mapValues(obj: unknown, fn: (v: JsonSchema) => JsonSchema): Record<string, JsonSchema> | undefined {
  if (!isRecord(obj)) return undefined
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, isRecord(v) ? fn(v) : (v as JsonSchema)]))
}

function withSchema(obj: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...obj }
  if (obj.schema !== undefined) out.schema = schemaTo30(obj.schema)
  if (obj.content !== undefined) out.content = mapValues(obj.content, withSchema)
  return out
}

function response(r: JsonSchema): JsonSchema {
  if (typeof r.$ref === 'string') return { $ref: r.$ref }
  const out = withSchema(r)
  if (r.headers !== undefined) out.headers = mapValues(r.headers, withSchema)
  return out
}

function operation(op: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...op }
  if (Array.isArray(op.parameters)) out.parameters = op.parameters.map((p) => (isRecord(p) ? withSchema(p) : p))
  if (isRecord(op.requestBody)) out.requestBody = withSchema(op.requestBody)
  if (isRecord(op.responses)) out.responses = mapValues(op.responses, response)
  delete out.callbacks
  return out
}

export function toOpenApi30(doc: OpenApiDocument): OpenApiDocument {
  const { webhooks: _w, jsonSchemaDialect: _d, ...rest } = doc
  const info: Record<string, unknown> = { ...doc.info }
  delete info.summary
  if (isRecord(info.license)) {
    // 3.0 has no SPDX `identifier`; the SPDX page is the licence's URL.
    const { identifier, ...license } = info.license
    if (typeof identifier === 'string' && license.url === undefined)
      license.url = `https://spdx.org/licenses/${encodeURIComponent(identifier)}.html`
    info.license = license
  }

  const paths: Record<string, Record<string, unknown>> = {}
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const outItem: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(item)) {
      if (key === 'parameters' && Array.isArray(value))
        outItem.parameters = value.map((p) => (isRecord(p) ? withSchema(p) : p))
      else outItem[key] = isRecord(value) && key !== 'servers' ? operation(value) : value
    }
    paths[path] = outItem
  }

  const components: Record<string, Record<string, unknown>> = {}
  for (const [key, value] of Object.entries(doc.components ?? {})) {
    if (key === 'pathItems' || !isRecord(value)) continue
    if (key === 'schemas') components.schemas = mapValues(value, schemaTo30) ?? {}
    else if (key === 'responses') components.responses = mapValues(value, response) ?? {}
    else if (key === 'parameters' || key === 'headers' || key === 'requestBodies')
      components[key] = mapValues(value, withSchema) ?? {}
    else if (key === 'securitySchemes')
      components.securitySchemes = Object.fromEntries(
        Object.entries(value).filter(([, s]) => !(isRecord(s) && s.type === 'mutualTLS')),
      )
    else components[key] = value
  }

  return { ...rest, openapi: '3.0.3', info, paths, components }
}
