import type { TSchema } from 'typebox'
import { cloneSchema } from '../openapi/json-schema.ts'
import { applyFieldTags, type FieldLocation, type RequestParts } from '../openapi/request-split.ts'

/**
 * The single-request-type model: one request type whose fields say where they travel. The tags
 * only describe; the split into Fastify's `params`, `querystring`, `headers` and `body` happens when
 * a route is defined (`defineRoute`, or `splitFieldTags` for a plain Fastify route), so a route
 * validates the same whether or not anything documents it.
 */

/** Marks a property with its location, keeping TypeBox's markers (Optional, ...) intact. */
function tag<T extends TSchema, L extends FieldLocation>(schema: T, location: L): T & { in: L } {
  const copy = cloneSchema(schema) as T & { in: L }
  copy.in = location
  return copy
}
export const inPath = <T extends TSchema>(schema: T) => tag(schema, 'path')
export const inQuery = <T extends TSchema>(schema: T) => tag(schema, 'query')
export const inHeader = <T extends TSchema>(schema: T) => tag(schema, 'header')
export const inForm = <T extends TSchema>(schema: T) => tag(schema, 'form')

/**
 * A plain route's schema with the `in`-tagged fields of its `body` moved to the parts Fastify
 * validates them in (a copy; untagged schemas come back as they are):
 *
 * ```ts
 * app.post('/owners/:ownerId/pets', { schema: splitFieldTags({ body: Type.Object({ ownerId: inPath(Type.String()), name: Type.String() }) }) }, handler)
 * ```
 *
 * Without it, Fastify's strict Ajv refuses the unknown `in` keyword when the server starts.
 */
export function splitFieldTags<S extends RequestParts>(schema: S, where = 'route schema'): S {
  return applyFieldTags(schema, where)
}
