import fc from 'fast-check'
import { PATH_SEGMENT_PATTERN } from '../../src/auth/types/common.ts'

/**
 * fast-check arbitraries from the JSON Schemas of authgate's own document: the request parts an
 * operation documents (path and query parameters, JSON bodies). Covers the keywords the document
 * uses; what the generator cannot aim at exactly (`not`, `allOf`, `dependentSchemas`, patterns
 * other than the path guard's) is left to a filter with the document's schema, so every sample is
 * a request the document calls valid.
 */
type Schema = Record<string, unknown>
const isRecord = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v)

export function arbitraryFor(schema: unknown, components: Record<string, unknown>, depth = 0): fc.Arbitrary<unknown> {
  if (!isRecord(schema) || depth > 6) return fc.constant(null)
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop()!
    return arbitraryFor(components[name], components, depth + 1)
  }
  if ('const' in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]))
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) {
      const members = (schema[key] as unknown[]).map((m) =>
        arbitraryFor({ ...withoutCombinators(schema), ...(m as Schema) }, components, depth + 1),
      )
      return fc.oneof(...members)
    }
  }
  const types = Array.isArray(schema.type)
    ? (schema.type as string[])
    : typeof schema.type === 'string'
      ? [schema.type]
      : []
  if (types.length > 1)
    return fc.oneof(...types.map((t) => arbitraryFor({ ...schema, type: t }, components, depth + 1)))
  const type = types[0] ?? (schema.properties ? 'object' : undefined)
  switch (type) {
    case 'null':
      return fc.constant(null)
    case 'boolean':
      return fc.boolean()
    case 'integer':
      return fc.integer({
        min: typeof schema.minimum === 'number' ? schema.minimum : -1000,
        max: typeof schema.maximum === 'number' ? schema.maximum : 1_000_000,
      })
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 })
    case 'string':
      return stringArbitrary(schema)
    case 'array': {
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0
      const max = Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 3, min + 3)
      return fc.array(arbitraryFor(schema.items, components, depth + 1), { minLength: min, maxLength: max })
    }
    case 'object': {
      const properties = isRecord(schema.properties) ? schema.properties : {}
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : []
      const model: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [k, v] of Object.entries(properties)) model[k] = arbitraryFor(v, components, depth + 1)
      if (Object.keys(model).length === 0)
        return fc.dictionary(
          fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== '__proto__'),
          fc.jsonValue({ maxDepth: 1 }),
          { maxKeys: 3 },
        )
      return fc.record(model, { requiredKeys: required.filter((k) => k in model) })
    }
    default:
      return fc.jsonValue({ maxDepth: 1 })
  }
}

function withoutCombinators(schema: Schema): Schema {
  const { anyOf: _a, oneOf: _o, examples: _e, description: _d, ...rest } = schema
  return rest
}

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0
  const max = typeof schema.maxLength === 'number' ? Math.min(schema.maxLength, min + 40) : min + 24
  switch (schema.format) {
    case 'uuid':
      return fc.uuid()
    case 'email':
      return fc.emailAddress().filter((e) => e.length <= max)
    case 'date-time':
      return fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString())
    case 'uri':
      return fc.webUrl()
  }
  if (schema.pattern === PATH_SEGMENT_PATTERN) {
    const re = new RegExp(PATH_SEGMENT_PATTERN, 'u')
    return fc.string({ unit: 'grapheme', minLength: 1, maxLength: 16 }).filter((s) => re.test(s))
  }
  if (typeof schema.pattern === 'string') {
    // `^[class]+$` with lengths: characters of the class, as many as the lengths allow.
    const charClass = /^\^(\[[^\]]+\])\+\$$/.exec(schema.pattern)
    if (charClass)
      return fc.string({
        unit: fc.stringMatching(new RegExp(`^${charClass[1]}$`)),
        minLength: Math.max(min, 1),
        maxLength: Math.max(max, min, 1),
      })
    return fc.stringMatching(new RegExp(schema.pattern))
  }
  return fc.string({ unit: 'grapheme', minLength: min, maxLength: max })
}
