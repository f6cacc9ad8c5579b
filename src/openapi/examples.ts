import type { JsonSchema } from './types.ts'
import { isRecord } from './json-schema.ts'

/**
 * Examples for fields that declare none: chosen from the field name and type, then
 * checked against the field's own constraints. A value that cannot be made to fit (a pattern it
 * does not match, a length its format cannot have) is left out rather than documented wrongly.
 * Values are fixed, so the document is the same on every build.
 */

const TIMESTAMP = '2024-01-15T09:30:00Z'
const UUID = '3fa85f64-5717-4562-b3fc-2c963f66afa6'

const BY_FORMAT: Record<string, string> = {
  email: 'user@example.com',
  'idn-email': 'user@example.com',
  uri: 'https://example.com',
  url: 'https://example.com',
  iri: 'https://example.com',
  'uri-reference': '/path/to/resource',
  'iri-reference': '/path/to/resource',
  'date-time': TIMESTAMP,
  date: '2024-01-15',
  time: '09:30:00Z',
  duration: 'PT1H',
  uuid: UUID,
  ipv4: '192.0.2.10',
  ipv6: '2001:db8::10',
  hostname: 'example.com',
  'idn-hostname': 'example.com',
  byte: 'ZXhhbXBsZQ==',
  password: 'correct-horse-battery-staple',
  'json-pointer': '/data/0',
  regex: '^[a-z]+$',
}

/** Name rules, first match wins; `n` is the lower-cased field name with `-` and camel humps as `_`. */
const BY_NAME: Array<[RegExp, string]> = [
  [/(^|_)e?mail(_|$)|email/, 'user@example.com'],
  [/(_|^)(at|on)$|^(created|updated|deleted|expires|modified|timestamp)$|_time$|^time$|_date$/, TIMESTAMP],
  [/(^|_)(url|uri|link|href|website|homepage)$|_url_|_uri_/, 'https://example.com'],
  [/(^|_)uuid$|^id$|_id$/, UUID],
  [/(^|_)phone(_number)?$/, '+15551234567'],
  [/password|secret/, 'correct-horse-battery-staple'],
  [/(^|_)token$/, 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl'],
  [/^first_?name$|^given_name$/, 'Jane'],
  [/^last_?name$|^family_name$|^surname$/, 'Doe'],
  [/(^|_)(full_)?name$|^username$|^display_name$/, 'Jane Doe'],
  [/title$/, 'Example title'],
  [/description|summary|comment|note|message|body|text|content/, 'Example text'],
  [/(^|_)code$|otp/, '123456'],
  [/slug/, 'example-slug'],
  [/(^|_)(locale|lang|language)$/, 'en'],
  [/(^|_)country$/, 'US'],
  [/(^|_)currency$/, 'EUR'],
  [/(^|_)(ip|ip_address)$/, '192.0.2.10'],
  [/(^|_)(host|hostname|domain)$/, 'example.com'],
  [/(^|_)(status|state)$/, 'active'],
  [/(^|_)(type|kind|category)$/, 'default'],
  [/color|colour/, '#3366ff'],
]

const INT_BY_NAME: Array<[RegExp, number]> = [
  [/(_|^)(at|on)$|timestamp|^(created|updated|expires)$/, 1705311000],
  [/expires_in|ttl|timeout|duration|seconds/, 3600],
  [/(^|_)(page)$/, 1],
  [/(^|_)(limit|per_page|page_size|size)$/, 20],
  [/(^|_)(offset|skip)$/, 0],
  [/(^|_)age$/, 30],
  [/(^|_)year$/, 2024],
  [/(^|_)port$/, 8080],
  [/count|total|quantity|qty/, 10],
  [/(^|_)id$/, 42],
]

const NUM_BY_NAME: Array<[RegExp, number]> = [
  [/price|amount|cost|total/, 19.99],
  [/(^|_)lat(itude)?$/, 52.52],
  [/(^|_)(lng|lon|longitude)$/, 13.405],
  [/rate|ratio|score|percent/, 0.75],
]

function normaliseName(name: string | undefined): string {
  return (name ?? '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toLowerCase()
}

function typesOf(schema: JsonSchema): string[] {
  const t = schema.type
  if (typeof t === 'string') return [t]
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string')
  if (schema.properties || schema.additionalProperties || schema.patternProperties) return ['object']
  if (schema.items || schema.prefixItems) return ['array']
  if (
    typeof schema.format === 'string' ||
    schema.minLength !== undefined ||
    schema.maxLength !== undefined ||
    schema.pattern !== undefined
  )
    return ['string']
  if (schema.minimum !== undefined || schema.maximum !== undefined) return ['number']
  return []
}

function fitString(value: string, schema: JsonSchema, formatted: boolean): string | undefined {
  let v = value
  const min = typeof schema.minLength === 'number' ? schema.minLength : undefined
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : undefined
  if (max !== undefined && [...v].length > max) {
    if (formatted) return undefined
    v = [...v].slice(0, max).join('')
  }
  if (min !== undefined && [...v].length < min) {
    if (formatted) return undefined
    v = v.padEnd(min, 'x')
  }
  if (typeof schema.pattern === 'string') {
    try {
      if (!new RegExp(schema.pattern, 'u').test(v)) return undefined
    } catch {
      return undefined
    }
  }
  return v
}

function fitNumber(value: number, schema: JsonSchema, integer: boolean): number | undefined {
  let v = value
  const num = (k: string) => (typeof schema[k] === 'number' ? (schema[k] as number) : undefined)
  const min = num('minimum')
  const max = num('maximum')
  // 3.1 exclusive bounds are numbers; 3.0-style booleans modify minimum/maximum.
  const exMin = num('exclusiveMinimum') ?? (schema.exclusiveMinimum === true ? min : undefined)
  const exMax = num('exclusiveMaximum') ?? (schema.exclusiveMaximum === true ? max : undefined)
  const step = integer ? 1 : 0.01
  if (min !== undefined && v < min) v = min
  if (max !== undefined && v > max) v = max
  if (exMin !== undefined && v <= exMin) v = exMin + step
  if (exMax !== undefined && v >= exMax) v = exMax - step
  const multipleOf = num('multipleOf')
  if (multipleOf !== undefined && multipleOf > 0) v = Math.ceil(v / multipleOf) * multipleOf
  if (integer) v = Math.round(v)
  const ok =
    (min === undefined || v >= min) &&
    (max === undefined || v <= max) &&
    (exMin === undefined || v > exMin) &&
    (exMax === undefined || v < exMax) &&
    (multipleOf === undefined || Math.abs(v / multipleOf - Math.round(v / multipleOf)) < 1e-9)
  return ok ? v : undefined
}

function stringExample(name: string, schema: JsonSchema): string | undefined {
  const format = typeof schema.format === 'string' ? schema.format : undefined
  if (format !== undefined && BY_FORMAT[format] !== undefined) return fitString(BY_FORMAT[format], schema, true)
  if (format === undefined) {
    for (const [re, value] of BY_NAME) {
      if (!re.test(name)) continue
      const fitted = fitString(value, schema, true)
      if (fitted !== undefined) return fitted
      break
    }
  }
  return fitString('string', schema, false)
}

/** A declared example, if the schema carries one (JSON Schema `examples`, OpenAPI `example`, `default`, `const`, `enum`). */
export function declaredExample(schema: JsonSchema): { value: unknown } | undefined {
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return { value: schema.examples[0] }
  if ('example' in schema && schema.example !== undefined) return { value: schema.example }
  if ('default' in schema && schema.default !== undefined) return { value: schema.default }
  if ('const' in schema) return { value: schema.const }
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return { value: schema.enum[0] }
  return undefined
}

/**
 * An example value for `schema` (a field called `name`), declared or generated; `undefined` when
 * none can be given honestly (a `$ref`, an untyped schema, constraints the value cannot meet).
 */
export function exampleFor(schema: unknown, name?: string, depth = 0): unknown {
  if (!isRecord(schema) || depth > 8) return undefined
  const declared = declaredExample(schema)
  if (declared) return declared.value
  if (typeof schema.$ref === 'string') return undefined
  for (const key of ['anyOf', 'oneOf'] as const) {
    const members = schema[key]
    if (Array.isArray(members)) {
      for (const m of members) {
        if (isRecord(m) && m.type === 'null') continue
        const v = exampleFor(m, name, depth + 1)
        if (v !== undefined) return v
      }
      return undefined
    }
  }
  if (Array.isArray(schema.allOf)) {
    const parts = schema.allOf.map((m) => exampleFor(m, name, depth + 1))
    if (parts.some((p) => p === undefined)) return undefined
    if (parts.every(isRecord)) return Object.assign({}, ...parts)
    return parts[0]
  }
  const n = normaliseName(name)
  const types = typesOf(schema).filter((t) => t !== 'null')
  const type = types[0]
  switch (type) {
    case 'string':
      return stringExample(n, schema)
    case 'integer':
    case 'number': {
      const table = type === 'integer' ? INT_BY_NAME : [...NUM_BY_NAME, ...INT_BY_NAME]
      const hit = table.find(([re]) => re.test(n))
      return fitNumber(hit ? hit[1] : type === 'integer' ? 1 : 1.5, schema, type === 'integer')
    }
    case 'boolean':
      return true
    case 'array': {
      const item = exampleFor(schema.items, name, depth + 1)
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0
      const max = typeof schema.maxItems === 'number' ? schema.maxItems : Infinity
      if (max === 0) return []
      if (item === undefined) return min === 0 ? [] : undefined
      if (min > 1 && schema.uniqueItems === true) return undefined
      return new Array(Math.max(1, min)).fill(item)
    }
    case 'object': {
      const props = isRecord(schema.properties) ? schema.properties : {}
      const required = Array.isArray(schema.required) ? schema.required : []
      const out: Record<string, unknown> = {}
      for (const [key, sub] of Object.entries(props)) {
        const v = exampleFor(sub, key, depth + 1)
        if (v === undefined) {
          if (required.includes(key)) return undefined
          continue
        }
        out[key] = v
      }
      return out
    }
    default:
      if (types.length === 0 && typesOf(schema).includes('null')) return null
      return undefined
  }
}

function isContainer(schema: JsonSchema): boolean {
  const t = typesOf(schema)
  return t.includes('object') || t.includes('array')
}

/**
 * Adds `examples: [value]` to every leaf field of `schema` that has no example, default, const or
 * enum (in place: call it on a copy). Objects and arrays are left to be composed from their
 * fields, as documentation UIs do.
 */
export function addGeneratedExamples(schema: unknown, name?: string, depth = 0): void {
  if (!isRecord(schema) || depth > 32 || typeof schema.$ref === 'string') return
  const combos = (['anyOf', 'oneOf', 'allOf'] as const).flatMap((k) =>
    Array.isArray(schema[k]) ? (schema[k] as unknown[]) : [],
  )
  if (isContainer(schema) || combos.some((m) => isRecord(m) && (isContainer(m) || typeof m.$ref === 'string'))) {
    if (isRecord(schema.properties))
      for (const [key, sub] of Object.entries(schema.properties)) addGeneratedExamples(sub, key, depth + 1)
    if (isRecord(schema.items)) addGeneratedExamples(schema.items, name, depth + 1)
    for (const m of combos) if (!(isRecord(m) && m.type === 'null')) addGeneratedExamples(m, name, depth + 1)
    return
  }
  if (declaredExample(schema)) return
  const types = typesOf(schema)
  if (types.length > 0 && types.every((t) => t === 'null')) return // `null` says it all
  const value = exampleFor(schema, name)
  if (value !== undefined) schema.examples = [value]
}
