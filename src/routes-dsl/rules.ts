import type { JsonSchema } from '../openapi/types.ts'
import { cloneSchema } from '../openapi/json-schema.ts'

/**
 * The validation vocabulary (min, max, len, email, url, default) as JSON Schema keywords,
 * so one schema both validates (Fastify's Ajv) and documents. The keyword depends on the type:
 *
 * | rule       | string                 | array                | number / integer    |
 * |------------|------------------------|----------------------|---------------------|
 * | min / max  | minLength / maxLength  | minItems / maxItems  | minimum / maximum   |
 * | len        | minLength = maxLength  | minItems = maxItems  | (error)             |
 * | email, url | format email / uri     | (error)              | (error)             |
 * | default    | default                | default              | default             |
 *
 * The vocabulary's min/max is a length for arrays too; JSON Schema's length of an array is
 * minItems/maxItems (minLength on an array validates nothing), so that is what is emitted.
 */
export interface Rules {
  min?: number
  max?: number
  len?: number
  email?: boolean
  url?: boolean
  default?: unknown
}

function kind(schema: JsonSchema): 'string' | 'array' | 'number' | 'other' {
  const types = typeof schema.type === 'string' ? [schema.type] : Array.isArray(schema.type) ? schema.type : []
  if (types.includes('string')) return 'string'
  if (types.includes('array')) return 'array'
  if (types.includes('number') || types.includes('integer')) return 'number'
  return 'other'
}

/** A copy of `schema` with the rules applied; keeps TypeBox's markers (e.g. Optional). */
export function withRules<T extends object>(schema: T, rules: Rules): T {
  const copy = cloneSchema(schema)
  const out = copy as unknown as JsonSchema
  const k = kind(out)
  const fail = (rule: string): never => {
    throw new TypeError(
      `rule "${rule}" does not apply to a schema of type ${JSON.stringify((out as JsonSchema).type ?? 'unknown')}`,
    )
  }
  const bounds =
    k === 'string'
      ? (['minLength', 'maxLength'] as const)
      : k === 'array'
        ? (['minItems', 'maxItems'] as const)
        : k === 'number'
          ? (['minimum', 'maximum'] as const)
          : undefined

  if (rules.min !== undefined) {
    if (!bounds) fail('min')
    out[bounds![0]] = rules.min
  }
  if (rules.max !== undefined) {
    if (!bounds) fail('max')
    out[bounds![1]] = rules.max
  }
  if (rules.len !== undefined) {
    if (k !== 'string' && k !== 'array') fail('len')
    out[bounds![0]] = rules.len
    out[bounds![1]] = rules.len
  }
  if (rules.email || rules.url) {
    if (k !== 'string') fail(rules.email ? 'email' : 'url')
    out.format = rules.email ? 'email' : 'uri'
  }
  if ('default' in rules) out.default = rules.default
  return copy
}
