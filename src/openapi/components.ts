import type { JsonSchema } from './types.ts'
import { isRecord } from './json-schema.ts'

/**
 * Turns route schemas into document schemas: named schemas (`$id`, or a `title` on an object,
 * array, enum or combination) move to `components.schemas` and are referenced from where they
 * were; `$ref`s to an `$id`, to `$defs`/`definitions` or to a schema added with `app.addSchema`
 * become `#/components/schemas/...` references; anything left unresolvable is replaced by an
 * unconstrained schema so the document never carries a dangling reference.
 *
 * Inputs are never modified (route schemas are live Fastify objects): every schema node of the
 * output is a new object; only literal values (examples, enums, defaults) are shared.
 */
const COMPONENT_NAME = /[^A-Za-z0-9._-]+/g
const ANNOTATIONS = new Set(['description', 'examples', 'example', 'deprecated', '$comment'])

/** A plain-JSON copy: drops functions, symbols and TypeBox's non-enumerable markers. */
export function cloneJson<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T)
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

function withoutAnnotations(schema: JsonSchema): JsonSchema {
  return Object.fromEntries(Object.entries(schema).filter(([k]) => !ANNOTATIONS.has(k)))
}

function isNameable(schema: JsonSchema): boolean {
  if (typeof schema.$id === 'string') return true
  if (typeof schema.title !== 'string' || schema.title.trim() === '') return false
  const t = schema.type
  return (
    t === 'object' ||
    t === 'array' ||
    schema.properties !== undefined ||
    schema.items !== undefined ||
    Array.isArray(schema.enum) ||
    Array.isArray(schema.anyOf) ||
    Array.isArray(schema.oneOf) ||
    Array.isArray(schema.allOf)
  )
}

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const
const SCHEMA_SINGLES = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
] as const

export class ComponentCollector {
  readonly schemas: Record<string, JsonSchema> = {}
  readonly #shared: Record<string, unknown>
  readonly #byId = new Map<string, string>()
  readonly #byContent = new Map<string, string>()
  // The same schema object (a type used by many routes) is converted once per document.
  readonly #byNode = new Map<object, string>()
  readonly #refsTo = new Map<string, number>()

  constructor(sharedSchemas: Record<string, unknown> = {}) {
    this.#shared = sharedSchemas
  }

  /**
   * The document form of one route schema (a copy). With `asComponent`, a nameable schema
   * comes back as a reference; otherwise the top level stays inline (a parameter schema, say).
   */
  convert(schema: unknown, asComponent = true): JsonSchema {
    if (!isRecord(schema)) return schema === false ? { not: {} } : {}
    const scope = new Scope(schema)
    return asComponent ? this.#visit(schema, scope) : this.#children(schema, scope)
  }

  /** Adds (or finds) `schema` as a named component and returns its reference. */
  reference(schema: JsonSchema): JsonSchema {
    return this.convert(schema, true)
  }

  #uniqueName(base: string): string {
    const clean = base.replace(COMPONENT_NAME, '_').replace(/^_+|_+$/g, '') || 'Schema'
    let name = clean
    for (let n = 2; name in this.schemas; n++) name = `${clean}${n}`
    return name
  }

  #visit(node: JsonSchema, scope: Scope, defName?: string): JsonSchema {
    if (typeof node.$ref === 'string') return this.#resolveRef(node, scope)
    if (isNameable(node) || defName !== undefined) return this.#hoist(node, scope, defName)
    return this.#children(node, scope)
  }

  #hoist(node: JsonSchema, scope: Scope, defName?: string): JsonSchema {
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
    const done = this.#byNode.get(node)
    if (done !== undefined) return ref(done)
    const id = typeof node.$id === 'string' ? node.$id : undefined
    if (id !== undefined && this.#byId.has(id)) return ref(this.#byId.get(id)!)

    const base = (typeof node.title === 'string' && node.title) || id || defName || 'Schema'
    const name = this.#uniqueName(base)
    this.#byNode.set(node, name)
    if (id !== undefined) this.#byId.set(id, name)
    this.schemas[name] = {} // reserved while its fields are converted (a schema may refer to itself)
    const refsBefore = this.#refsTo.get(name) ?? 0
    const converted = this.#children(node, scope)

    // Identical schemas under one title (e.g. a response type spread into several routes with
    // different descriptions) share one component, unless the new one refers to itself.
    const key = `${base}\u0000${canonical(withoutAnnotations(converted))}`
    const same = this.#byContent.get(key)
    if (id === undefined && same !== undefined && (this.#refsTo.get(name) ?? 0) === refsBefore) {
      delete this.schemas[name]
      this.#byNode.set(node, same)
      return ref(same)
    }
    this.#byContent.set(key, name)
    this.schemas[name] = converted
    return ref(name)
  }

  #children(node: JsonSchema, scope: Scope): JsonSchema {
    const out: JsonSchema = {}
    for (const [key, value] of Object.entries(node)) {
      if (key === '$id' || key === '$schema' || key === '$defs' || key === 'definitions' || key === '$anchor') continue
      if ((SCHEMA_MAPS as readonly string[]).includes(key) && isRecord(value)) {
        out[key] = Object.fromEntries(
          Object.entries(value).map(([k, v]) => [k, isRecord(v) ? this.#visit(v, scope) : v]),
        )
      } else if ((SCHEMA_LISTS as readonly string[]).includes(key) && Array.isArray(value)) {
        out[key] = value.map((v) => (isRecord(v) ? this.#visit(v, scope) : v))
      } else if ((SCHEMA_SINGLES as readonly string[]).includes(key) && isRecord(value)) {
        out[key] = this.#visit(value, scope)
      } else {
        // Literal values (examples, enum, default, required) are copied so the document can be
        // changed without changing the route.
        out[key] = typeof value === 'object' && value !== null ? cloneJson(value) : value
      }
    }
    return out
  }

  #resolveRef(node: JsonSchema, scope: Scope): JsonSchema {
    const raw = node.$ref as string
    const { $ref: _ref, ...siblings } = node
    const keep = (target: JsonSchema) =>
      Object.keys(siblings).length > 0 ? { ...this.#children(siblings, scope), ...target } : target
    if (raw.startsWith('#/components/')) return keep({ $ref: raw })

    const hash = raw.indexOf('#')
    const base = hash === -1 ? raw : raw.slice(0, hash)
    const pointer = hash === -1 ? '' : raw.slice(hash + 1)

    let target: JsonSchema | undefined
    let rest = pointer
    let defName: string | undefined
    if (base === '') {
      // Local pointer into this schema's own $defs/definitions.
      const m = /^\/(\$defs|definitions)\/([^/]+)(.*)$/.exec(pointer)
      if (m) {
        const defs = scope.root[m[1]!]
        const name = decodePointerToken(m[2]!)
        if (isRecord(defs) && isRecord(defs[name])) {
          target = defs[name] as JsonSchema
          defName = name
          rest = m[3] ?? ''
        }
      } else if (pointer === '' || pointer === '/') {
        target = scope.root
        defName = 'Schema'
        rest = ''
      }
    } else {
      target = scope.ids.get(base)
      if (target === undefined && isRecord(this.#shared[base])) target = this.#shared[base] as JsonSchema
      defName = base
    }
    if (target === undefined)
      return keep({
        description: typeof node.description === 'string' ? node.description : `Unresolved reference ${raw}`,
      })

    const ref = this.#hoist(target, target === scope.root ? scope : scope.withIds(target), defName)
    const name = (ref.$ref as string).slice('#/components/schemas/'.length)
    this.#refsTo.set(name, (this.#refsTo.get(name) ?? 0) + 1)
    return keep(rest && rest !== '/' ? { $ref: `${ref.$ref as string}${rest}` } : ref)
  }
}

function decodePointerToken(token: string): string {
  return decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~')
}

/** The identifiers visible inside one route schema: its own `$id`s (collected on first use). */
class Scope {
  readonly root: JsonSchema
  #ids: Map<string, JsonSchema> | undefined

  constructor(root: JsonSchema) {
    this.root = root
  }

  get ids(): Map<string, JsonSchema> {
    if (!this.#ids) {
      this.#ids = new Map()
      collectIds(this.root, this.#ids)
    }
    return this.#ids
  }

  /** Same scope; schemas pulled in from `addSchema` bring their own `$id`s. */
  withIds(schema: JsonSchema): Scope {
    collectIds(schema, this.ids)
    return this
  }
}

function collectIds(node: unknown, ids: Map<string, JsonSchema>, depth = 0): void {
  if (depth > 64) return
  if (Array.isArray(node)) {
    for (const v of node) collectIds(v, ids, depth + 1)
    return
  }
  if (!isRecord(node)) return
  if (typeof node.$id === 'string' && !ids.has(node.$id.replace(/#$/, ''))) ids.set(node.$id.replace(/#$/, ''), node)
  for (const v of Object.values(node)) collectIds(v, ids, depth + 1)
}
