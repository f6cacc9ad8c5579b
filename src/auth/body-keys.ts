import { isRecord } from '../core/is-record.ts'

/**
 * Object keys as Supabase Auth's decoder (Go's encoding/json) reads them. It gives a key to the
 * struct field of the same name, else to a field whose name is equal ignoring case, and decodes
 * every occurrence of a repeated key in order (the last wins, except that a `null` leaves a string
 * as it was and a nested object merges into the earlier one). authgate reads keys by exact name and
 * `JSON.parse` keeps the last occurrence, so a body with a key in another case, or a key given twice,
 * would be judged, limited and counted on a value the backend does not act on. Such a body is
 * refused, never forwarded (docs/decisions.md, D52).
 */

/**
 * A key folded as Go folds object keys to match field names: ASCII letters to upper case, and the
 * two other characters whose case orbit holds an ASCII letter, U+017F (long s) and U+212A (Kelvin
 * sign), to `S` and `K`. Other characters fold to characters outside ASCII, so they never make a key
 * match a field whose name is ASCII, as every field of a request body is; they are kept as they are.
 */
export function goFoldedKey(key: string): string {
  let out = ''
  for (const ch of key) {
    const c = ch.charCodeAt(0)
    if (c >= 0x61 && c <= 0x7a) out += String.fromCharCode(c - 0x20)
    else if (c === 0x17f) out += 'S'
    else if (c === 0x212a) out += 'K'
    else out += ch
  }
  return out
}

/** A key that the backend and authgate would read differently, and where it is. */
export interface KeyProblem {
  /** Keys (and array positions) from the body's root to the object holding `key`. */
  path: readonly (string | number)[]
  key: string
  /** The field the backend gives the key to, when it differs from the key itself. */
  field?: string
}

interface Frame {
  /** The keys seen so far: undefined in an array. */
  keys: Set<string> | undefined
  /** The frame holding this one, undefined at the root. */
  parent: Frame | undefined
  /** The last key read (objects), or the current index (arrays). */
  at: string | number
}

/**
 * The work of one walk, for the tests that hold it linear: one step per character of the text (the
 * walk never reads one twice), per frame opened and per element of a path built.
 */
export interface WalkWork {
  steps: number
}

/** Keys (and array positions) from the root to `frame`, built only when a repeated key is found. */
function pathOf(frame: Frame, work: WalkWork | undefined): (string | number)[] {
  const path: (string | number)[] = []
  for (let f = frame.parent; f !== undefined; f = f.parent) path.push(f.at)
  if (work) work.steps += path.length
  return path.reverse()
}

const ESCAPED: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }

/**
 * The string a JSON string's inside (already checked by the parser) stands for. A `JSON.parse` per
 * escaped key cost five times the parse of the whole body on a body of escaped keys.
 */
function unescaped(raw: string): string {
  let out = ''
  let from = 0
  for (let i = raw.indexOf('\\'); i !== -1; i = raw.indexOf('\\', from)) {
    out += raw.slice(from, i)
    const c = raw[i + 1]!
    if (c === 'u') {
      out += String.fromCharCode(parseInt(raw.slice(i + 2, i + 6), 16))
      from = i + 6
    } else {
      out += ESCAPED[c]!
      from = i + 2
    }
  }
  return out + raw.slice(from)
}

/**
 * The first key repeated within one object of a JSON text, at any depth. `text` must already have
 * been parsed successfully: the scan only tells keys from values and skips strings. One pass, and
 * each bracket costs the same whatever its depth: a frame points at its parent, and the path is
 * built only for the answer (a body of `[],[],…` nested deep costs what a flat one does).
 */
export function repeatedKey(text: string, work?: WalkWork): KeyProblem | undefined {
  if (work) work.steps += text.length
  let frame: Frame | undefined
  // True right after `{` or after a `,` in an object: the next string is a key.
  let expectKey = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const end = stringEnd(text, i)
      if (expectKey) {
        const keys = frame!.keys!
        const raw = text.slice(i + 1, end)
        // Only a key with an escape needs decoding (`"\u0065mail"` is `email`).
        const key = raw.includes('\\') ? unescaped(raw) : raw
        if (keys.has(key)) return { path: pathOf(frame!, work), key }
        keys.add(key)
        frame!.at = key
        expectKey = false
      }
      i = end
    } else if (c === 0x7b || c === 0x5b) {
      frame = { keys: c === 0x7b ? new Set() : undefined, parent: frame, at: 0 }
      if (work) work.steps++
      expectKey = c === 0x7b
    } else if (c === 0x7d || c === 0x5d) {
      // An empty object's `}` ends the wait for its first key: what follows belongs to the parent.
      frame = frame!.parent
      expectKey = false
    } else if (c === 0x2c) {
      if (frame!.keys === undefined) frame!.at = (frame!.at as number) + 1
      else expectKey = true
    }
  }
  return undefined
}

/** Where the JSON string opened by the quote at `start` of a parsed text closes (its escapes skipped). */
function stringEnd(text: string, start: number): number {
  let end = start + 1
  while (text.charCodeAt(end) !== 0x22) end += text.charCodeAt(end) === 0x5c ? 2 : 1
  return end
}

/**
 * The number of keys of a JSON text that is one object holding no object or array (most bodies: a
 * sign-in's), else undefined. `text` must already have been parsed successfully. Such an object
 * repeats no key when the parsed object has as many: `JSON.parse` keeps one of each name, so a
 * name sent twice leaves it with fewer (escaped spellings decoded, as `repeatedKey` decodes them).
 * One pass, with nothing allocated: no set of keys and no copy of each.
 */
export function flatObjectKeys(text: string): number | undefined {
  let keys = 0
  let opened = false
  // True right after `{` or after a `,`: the next string is a key.
  let expectKey = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const end = stringEnd(text, i)
      if (expectKey) {
        keys++
        expectKey = false
      }
      i = end
    } else if (c === 0x7b || c === 0x5b) {
      if (opened || c === 0x5b) return undefined
      opened = true
      expectKey = true
    } else if (c === 0x2c) expectKey = true
  }
  return opened ? keys : undefined
}

type Schema = Record<string, unknown>

/** The properties a schema declares for an object, its unions' and intersections' included. */
function declaredProperties(schema: Schema, into: Map<string, Schema> = new Map()): Map<string, Schema> {
  if (isRecord(schema.properties))
    for (const [name, property] of Object.entries(schema.properties))
      if (isRecord(property) && !into.has(name)) into.set(name, property)
  for (const keyword of ['anyOf', 'oneOf', 'allOf'] as const) {
    const members = schema[keyword]
    if (Array.isArray(members)) for (const m of members) if (isRecord(m)) declaredProperties(m, into)
  }
  return into
}

/** A schema's declared fields, and each field by its folded name: the same for every request. */
interface Fields {
  byName: Map<string, Schema>
  byFold: Map<string, string>
  /**
   * The fields, in the same order, whose values may hold keys to check: those declaring an object's
   * fields or an array's items. A value under any other field (a string, free-form metadata) holds
   * none that matter, so the per-request walk skips them without looking.
   */
  nested: [string, Schema][]
}
// Schemas are the route table's, built once: their fields are worked out on first use, not per request.
const fieldsOf = new WeakMap<Schema, Fields>()
function fields(schema: Schema): Fields {
  let found = fieldsOf.get(schema)
  if (found === undefined) {
    const byName = declaredProperties(schema)
    const byFold = new Map<string, string>()
    for (const name of byName.keys()) byFold.set(goFoldedKey(name), name)
    const nested: [string, Schema][] = []
    // Stored before the nested fields are worked out: a schema that holds itself ends there.
    fieldsOf.set(schema, (found = { byName, byFold, nested }))
    for (const [name, property] of byName)
      if (isRecord(property.items) || fields(property).byName.size > 0) nested.push([name, property])
  }
  return found
}

/**
 * The first key of `value` that is not a declared field's name but that the backend would give to
 * one (it differs only in case), at any depth where the schema declares the object's fields.
 * Objects without declared fields (user metadata) are free-form: their keys are the client's.
 */
export function caseFoldedKey(value: unknown, schema: Schema, path: (string | number)[] = []): KeyProblem | undefined {
  if (Array.isArray(value)) {
    const items = schema.items
    if (!isRecord(items)) return undefined
    for (let i = 0; i < value.length; i++) {
      const found = caseFoldedKey(value[i], items, [...path, i])
      if (found) return found
    }
    return undefined
  }
  if (!isRecord(value)) return undefined
  const { byName, byFold, nested } = fields(schema)
  if (byName.size === 0) return undefined
  for (const key of Object.keys(value)) {
    if (byName.has(key)) continue
    const field = byFold.get(goFoldedKey(key))
    if (field !== undefined) return { path, key, field }
  }
  for (const [name, property] of nested) {
    const inner = value[name]
    if (inner === null || typeof inner !== 'object' || !Object.hasOwn(value, name)) continue
    const found = caseFoldedKey(inner, property, [...path, name])
    if (found) return found
  }
  return undefined
}

/** Where a key is, for a message: `gotrue_meta_security.captcha_token`, `credential.response`. */
export function keyPath(problem: KeyProblem): string {
  return [...problem.path, problem.key].join('.')
}
