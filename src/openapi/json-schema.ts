import type { JsonSchema } from './types.ts'
import { isRecord as isPlainRecord } from '../core/is-record.ts'

/** Small JSON Schema helpers shared by the document builder, `defineRoute` and `withRules`. */

export const isRecord = (v: unknown): v is JsonSchema => isPlainRecord(v)

/**
 * A shallow copy that keeps the prototype and every property descriptor: TypeBox marks optional
 * and read-only properties with symbol keys, which a spread would drop.
 */
export function cloneSchema<T extends object>(schema: T): T {
  return Object.create(Object.getPrototypeOf(schema) as object | null, Object.getOwnPropertyDescriptors(schema)) as T
}

/** Two object schemas as one: `over`'s properties win, `required` is the union, `base`'s other keywords stay. */
export function mergeObjectSchemas(base: unknown, over: unknown): JsonSchema | undefined {
  if (!isRecord(base)) return isRecord(over) ? over : undefined
  if (!isRecord(over)) return base
  const properties = {
    ...(isRecord(base.properties) ? base.properties : {}),
    ...(isRecord(over.properties) ? over.properties : {}),
  }
  const required = [
    ...new Set([
      ...(Array.isArray(base.required) ? base.required : []),
      ...(Array.isArray(over.required) ? over.required : []),
    ]),
  ]
  return { ...base, type: 'object', properties, ...(required.length > 0 ? { required } : {}) }
}
