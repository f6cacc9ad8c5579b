import { isRecord } from '../../core/is-record.ts'

/**
 * `""` as Supabase Auth's handlers read it. Their checks are `params.Email != ""` and the like: for
 * the fields a route lists in `emptyIsAbsent`, an empty string is a field not sent, exactly as a
 * `null` is (./nullable.ts). `{"email":"a@b.co","phone":""}`, what Supabase's Go client sends, is an
 * e-mail request. The validator judges the body without those empty strings, and the document says
 * the same: the property admits `""`, described as absent, and the rules that pair fields name a
 * field present only when it is a non-empty string (`present`).
 */

type Schema = Record<string, unknown>

/** The body with the listed top-level fields removed where they are `""` (for judging only). */
export function withoutEmpty(value: unknown, fields: readonly string[] | undefined): unknown {
  if (fields === undefined || !isRecord(value)) return value
  let out: Record<string, unknown> | undefined
  for (const field of fields) {
    if (value[field] !== '') continue
    out ??= { ...value }
    delete out[field]
  }
  return out ?? value
}

/**
 * The fields present as the backend reads them: each a non-empty string (`null` and `""` are absent).
 * For the rules that pair fields (`not both`, `one of`, `this needs that`).
 */
export const present = (...fields: string[]) => ({
  required: fields,
  properties: Object.fromEntries(fields.map((f) => [f, { type: 'string', minLength: 1 }])),
})

/**
 * One string property that also admits `""`, read as absent. The type stays beside the `anyOf`
 * (its members only add rules to a string): OpenAPI 3.0's `nullable`, which the property gets
 * too, needs a `type` next to it.
 */
function orEmpty(property: Schema): Schema {
  const described = (d: unknown) => (typeof d === 'string' ? { description: `${d}. \`""\` is read as absent` } : {})
  if (Array.isArray(property.anyOf)) {
    // A union of strings and `null` (the PKCE fields): the same shape, its null a type beside it.
    const { anyOf, description, ...outer } = property
    const members = anyOf as Schema[]
    const strings = members.filter((m) => m.type === 'string')
    const nulls = members.filter((m) => m.type === 'null')
    if (strings.length + nulls.length !== members.length || strings.length === 0) return property
    return {
      ...outer,
      ...described(description),
      type: nulls.length > 0 ? ['string', 'null'] : 'string',
      anyOf: [...strings.map(({ type: _type, ...rule }) => rule), { maxLength: 0 }],
    }
  }
  if (property.type !== 'string') return property
  const { type, description, examples, ...rule } = property
  return {
    type,
    ...described(description),
    ...(examples !== undefined ? { examples } : {}),
    anyOf: [rule, { maxLength: 0 }],
  }
}

/** The body schema with each listed optional field admitting `""`. */
export function emptyAdmitted<T extends object>(schema: T, fields: readonly string[] | undefined): T {
  const s = schema as Schema
  if (fields === undefined || !isRecord(s.properties)) return schema
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : [])
  const properties: Schema = { ...s.properties }
  for (const field of fields) {
    const property = properties[field]
    if (isRecord(property) && !required.has(field)) properties[field] = orEmpty(property)
  }
  return { ...s, properties } as T
}

/** The words every field that refuses a NUL character adds to its description. */
export const NUL_REFUSED =
  'A NUL character (`\\u0000`) anywhere in it is refused (400 `validation_failed`): Supabase Auth cannot store it'

/** The body schema with the listed fields' descriptions stating the NUL rule. */
export function nulDocumented<T extends object>(schema: T, fields: readonly string[] | undefined): T {
  const s = schema as Schema
  if (fields === undefined || !isRecord(s.properties)) return schema
  const properties: Schema = { ...s.properties }
  for (const field of fields) {
    const property = properties[field]
    if (!isRecord(property)) continue
    const before = typeof property.description === 'string' ? `${property.description}. ` : ''
    properties[field] = { ...property, description: before + NUL_REFUSED }
  }
  return { ...s, properties } as T
}

/** Whether a JSON value holds a NUL character in a string or a key, at any depth. */
export function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000')
  if (Array.isArray(value)) return value.some(holdsNul)
  if (!isRecord(value)) return false
  // Keys one by one: `Object.entries` built a pair per key first, longer than parsing the body.
  for (const key of Object.keys(value)) if (key.includes('\u0000') || holdsNul(value[key])) return true
  return false
}
