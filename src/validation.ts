import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

// ajv-formats is CommonJS with a default export; under NodeNext its type is the module namespace.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

const base: Options = {
  allErrors: false,
  strict: false, // schemas carry documentation keywords (examples, in, ...)
  allowUnionTypes: true,
}

/**
 * Bodies: Fastify's default Ajv coerces types, fills defaults and removes properties
 * (LIBRARIES.md). Here the original bytes are forwarded, so validation must judge exactly what
 * the client sent: `{"n":"5"}` is not an integer.
 */
export const bodyAjv = addFormats(new Ajv({ ...base, coerceTypes: false, useDefaults: false, removeAdditional: false }))

/**
 * Query strings, path parameters and headers arrive as text, so an application's `integer` query
 * parameter needs coercion. Only the parsed copy changes; the forwarder uses the raw URL.
 */
export const textAjv = addFormats(new Ajv({ ...base, coerceTypes: 'array', useDefaults: true, removeAdditional: false }))

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv
  return ajv.compile(schema as object)
}

/** Auth routes validate only bodies; the backend judges query strings, which are forwarded raw. */
export const authValidatorCompiler: FastifySchemaCompiler<any> = (route) => (route.httpPart === 'body' ? validatorCompiler(route) : () => true)
