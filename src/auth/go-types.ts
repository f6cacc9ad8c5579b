import { isRecord } from '../core/is-record.ts'
import type { AuthRoute } from './routes/entry.ts'

/**
 * A value of a JSON type that the route's schema does not admit where it stands: Supabase Auth's
 * decoder (Go's `json.Unmarshal` into the request's struct, whose field types the schemas follow)
 * fails on it (`cannot unmarshal number into Go struct field … of type string`) before any check of
 * the handler, whatever else the body holds, and Supabase Auth answers 400 `bad_json`. A `null` is
 * never one: Go leaves the field as it was.
 */
export interface TypeMismatch {
  /** Where, as the validator names places (`body/email`, `body/factors/0`). */
  path: string
  /** The JSON type sent: `number`, `string`, `boolean`, `object` or `array`. */
  got: string
  /** The JSON types the schema admits there. */
  want: string
}

type Schema = Record<string, unknown>

/**
 * Fields no route's struct decodes with a type: `gotrue_meta_security` is read by the CAPTCHA check
 * alone, and a passkey `credential` is kept as raw JSON until the WebAuthn library reads it, after
 * the challenge is looked up. A value of any type gets past the decoding there.
 */
const UNDECODED = new Set(['gotrue_meta_security', 'credential'])

function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array'
  return value === null ? 'null' : typeof value
}

/** The JSON types a schema admits at its top (through `anyOf` and `oneOf`), or undefined when it names none. */
function admitted(schema: Schema): string[] | undefined {
  if (typeof schema.type === 'string') return [schema.type]
  if (Array.isArray(schema.type)) return schema.type as string[]
  const union = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined
  if (!Array.isArray(union)) return undefined
  const out: string[] = []
  for (const branch of union) {
    const types = isRecord(branch) ? admitted(branch) : undefined
    if (types === undefined) return undefined
    out.push(...types)
  }
  return out
}

function fits(types: readonly string[], type: string, value: unknown): boolean {
  return types.includes(type) || (type === 'number' && types.includes('integer') && Number.isInteger(value))
}

/** The part of a schema that describes values of `type`: its union's branch for it, else itself. */
function branchFor(schema: Schema, type: string): Schema {
  const union = (schema.anyOf ?? schema.oneOf) as unknown
  if (!Array.isArray(union)) return schema
  return (union as Schema[]).find((b) => isRecord(b) && admitted(b)?.includes(type)) ?? schema
}

/**
 * The first field of a request body, among those the route's struct decodes (`decoded`: all the
 * schema declares when undefined), whose value is of a JSON type its schema does not admit.
 */
export function bodyTypeMismatch(
  schema: unknown,
  body: unknown,
  decoded?: readonly string[],
): TypeMismatch | undefined {
  if (!isRecord(schema) || !isRecord(body) || !isRecord(schema.properties)) return typeMismatch(schema, body)
  for (const [key, item] of Object.entries(body)) {
    if (UNDECODED.has(key) || (decoded !== undefined && !decoded.includes(key))) continue
    if (!Object.hasOwn(schema.properties, key)) continue
    const found = typeMismatch(schema.properties[key], item, `body/${key}`)
    if (found) return found
  }
  return undefined
}

/**
 * The first value of `value` whose JSON type `schema` does not admit, walking the fields and items
 * the schema declares (free-form objects, such as user metadata, are not walked: Go reads them into
 * a map of anything).
 */
export function typeMismatch(schema: unknown, value: unknown, path = 'body'): TypeMismatch | undefined {
  if (!isRecord(schema) || value === null || value === undefined) return undefined
  const type = jsonType(value)
  const types = admitted(schema)
  if (types !== undefined && !fits(types, type, value))
    return { path, got: type, want: types.filter((t) => t !== 'null').join(' or ') }
  const branch = branchFor(schema, type)
  if (type === 'object' && isRecord(branch.properties)) {
    const properties = branch.properties
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      if (!Object.hasOwn(properties, key)) continue
      const found = typeMismatch(properties[key], item, `${path}/${key}`)
      if (found) return found
    }
  }
  if (type === 'array' && isRecord(branch.items)) {
    const items = value as unknown[]
    for (let i = 0; i < items.length; i++) {
      const found = typeMismatch(branch.items, items[i], `${path}/${i}`)
      if (found) return found
    }
  }
  return undefined
}

/**
 * The mismatch a request's body holds for Supabase Auth's decoder: among the fields the route's
 * struct decodes, which on a route whose struct a query value chooses (`/token`'s `grant_type`) are
 * those the table lists for that value, and none for a value it does not name.
 */
export function requestTypeMismatch(
  route: Pick<AuthRoute, 'body' | 'decodedByQuery'>,
  body: unknown,
  query: unknown,
): TypeMismatch | undefined {
  const byQuery = route.decodedByQuery
  if (byQuery === undefined) return bodyTypeMismatch(route.body, body)
  // Own entries only: `?grant_type=constructor` names no struct.
  const value = isRecord(query) ? query[byQuery.param] : undefined
  const decoded = typeof value === 'string' && Object.hasOwn(byQuery.fields, value) ? byQuery.fields[value] : []
  return bodyTypeMismatch(route.body, body, decoded)
}

/** What the decoder could not read, after Supabase Auth's "Could not parse request body as JSON: ". */
export function mismatchDetail(m: TypeMismatch): string {
  return `cannot read ${m.got === 'array' || m.got === 'object' ? 'an' : 'a'} ${m.got} as ${m.path}, which is ${m.want}`
}
