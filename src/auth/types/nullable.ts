import type { TSchema } from 'typebox'

/**
 * JSON `null` as Supabase Auth reads it. Its Go decoder turns a `null` into the field's zero value
 * (or a nil pointer, map or slice): for the backend, an optional field sent as `null` is a field not
 * sent. Every optional property of a request body therefore accepts `null`, at any depth, and the
 * document says so; the validator judges the body with its `null` properties removed
 * (`withoutNulls`), so the rules about which fields go together treat them as absent, as the backend
 * does. Required properties stay as they are: the backend reads their `null` as empty and refuses it.
 */

type Schema = Record<string | symbol, unknown>

const isObject = (value: unknown): value is Schema =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

const isNull = (s: unknown) => isObject(s) && s.type === 'null'

/** One property schema that also admits `null` (`type: [..., 'null']`, or `null` added to `anyOf`). */
export function orNull(schema: Schema): Schema {
  const inner = nullableOptionals(schema)
  const type = inner.type
  // A union without a type of its own (a type beside an `anyOf` makes the type nullable instead).
  if (Array.isArray(inner.anyOf) && type === undefined) {
    return inner.anyOf.some(isNull) ? inner : { ...inner, anyOf: [...inner.anyOf, { type: 'null' }] }
  }
  if (typeof type === 'string') {
    if (type === 'null') return inner
    const out: Schema = { ...inner, type: [type, 'null'] }
    if (Array.isArray(inner.enum) && !inner.enum.includes(null)) out.enum = [...inner.enum, null]
    return out
  }
  if (Array.isArray(type)) return type.includes('null') ? inner : { ...inner, type: [...type, 'null'] }
  // No type at all (`Type.Unknown()`): already admits null.
  return inner
}

/** The schema with every optional property of every object in it made nullable. */
export function nullableOptionals<T extends TSchema>(schema: T): T
export function nullableOptionals(schema: Schema): Schema
export function nullableOptionals(schema: Schema): Schema {
  if (!isObject(schema.properties)) return schema
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : [])
  const properties: Schema = {}
  for (const [name, property] of Object.entries(schema.properties)) {
    if (!isObject(property)) properties[name] = property
    else properties[name] = required.has(name) ? nullableOptionals(property) : orNull(property)
  }
  return { ...schema, properties }
}

/**
 * A parsed JSON body with every `null`-valued object property removed, at any depth (array items
 * stay): what Supabase Auth's decoder sees. Only for judging; the client's bytes are forwarded.
 *
 * One pass, copying only what changes: an object is walked once, and copied from its first `null`
 * (or first changed member) on; a part without a null is the parsed value itself. Most bodies hold
 * no null and are judged as parsed. A separate search for a null ahead of the copy read every key
 * of a large object twice (`Object.keys` of 100,000 keys costs about what parsing them does).
 */
export function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      const kept = item !== null && typeof item === 'object' ? withoutNulls(item) : item
      if (out === undefined) {
        if (kept === item) continue
        out = value.slice(0, i)
      }
      out.push(kept)
    }
    return out ?? value
  }
  if (!isObject(value)) return value
  // Own keys by `Object.keys`: `for…in` with an own-property test cost as much as the parse on an
  // object of 100,000 keys.
  const keys = Object.keys(value)
  let out: Record<string, unknown> | undefined
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    const item = value[key]
    const kept = item !== null && typeof item === 'object' ? withoutNulls(item) : item
    if (out === undefined) {
      if (item !== null && kept === item) continue
      out = {}
      for (let j = 0; j < i; j++) out[keys[j]!] = value[keys[j]!]
    }
    if (kept !== null) out[key] = kept
  }
  return out ?? value
}
