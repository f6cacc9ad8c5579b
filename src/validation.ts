import { Ajv, type ErrorObject, type ValidateFunction, type Vocabulary } from 'ajv'
import addFormatsModule from 'ajv-formats'
import nextVocabularyModule from 'ajv/dist/vocabularies/next.js'
import type { FastifySchemaCompiler } from 'fastify'

// ajv-formats and ajv's vocabularies are CommonJS with a default export; under NodeNext their type
// is the module namespace.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv
const nextVocabulary = (nextVocabularyModule as unknown as { default: Vocabulary }).default

/**
 * The e-mail check Supabase Auth applies to the addresses it validates (the checkmail package's
 * expression): stricter nowhere than the backend, so a gateway `format: email` never refuses an
 * address Supabase Auth would take (ajv-formats' own rule demands a dot in the domain, for one).
 */
export const BACKEND_EMAIL =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/

/**
 * Bodies of mounted routes. Fastify's default Ajv coerces types, fills defaults and removes
 * properties; here the original bytes are forwarded, so validation must judge exactly what the
 * client sent: `{"n":"5"}` is not an integer, and nothing is added or dropped.
 */
export const bodyAjv = addFormats(
  new Ajv({
    allErrors: false,
    strict: false, // schemas carry documentation keywords (examples, ...)
    allowUnionTypes: true,
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
  }),
)
  .addFormat('email', BACKEND_EMAIL)
  // dependentRequired (JSON Schema 2019-09): the default draft-07 class ignores it silently.
  .addVocabulary(nextVocabulary)

/**
 * The validator compiler of the auth context: bodies only. Query strings, path parameters and
 * headers are documented but judged by Supabase Auth, which receives them raw.
 */
export const authValidatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) =>
  httpPart === 'body' ? compiledOnFirstBody(schema as object) : () => true

/**
 * A body validator compiled when its route receives its first body, not at start-up: a deployment
 * calls a few of the routes, and the generated code of all of them held about 2 MB of an idle
 * service (docs/decisions.md, D48). Fastify reads a refusal's reasons from the function's `errors`,
 * as it would from ajv's own.
 */
function compiledOnFirstBody(schema: object): ((data: unknown) => boolean) & { errors?: ErrorObject[] | null } {
  let compiled: ValidateFunction | undefined
  const validate = (data: unknown): boolean => {
    compiled ??= bodyAjv.compile(schema)
    const valid = compiled(data)
    validate.errors = compiled.errors
    return valid
  }
  validate.errors = null as ErrorObject[] | null | undefined
  return validate
}
