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
    compiled ??= bodyAjv.compile(readOnlyAsJson.has(schema) ? (withoutPrototypeRule(schema) as object) : schema)
    const valid = compiled(data)
    validate.errors = compiled.errors
    return valid
  }
  validate.errors = null as ErrorObject[] | null | undefined
  return validate
}

// Body schemas of routes that take JSON only (src/auth/mount.ts marks them).
const readOnlyAsJson = new WeakSet<object>()

/**
 * Marks a route's body schema as one whose bodies reach the validator only through the JSON reader
 * (src/auth/body.ts): a route that takes no forms. That reader refuses a `__proto__` key at any
 * depth (400 `bad_json`) before anything is validated, so the prototype-key rule the schema states
 * for the document (`propertyNames: { not: { const: '__proto__' } }`, src/auth/route-docs.ts)
 * can never fail there, and it is left out of the compiled validator: ajv's code for it made an
 * error object and a list for every key of every body and then dropped them (0.27 KB a password
 * sign-in; docs/decisions.md, D196). A form's reader keeps such a key, so a route that takes forms
 * is judged on the whole schema.
 */
export function readOnlyAsJsonBody(schema: object): void {
  readOnlyAsJson.add(schema)
}

/** The prototype-key rule as src/auth/route-docs.ts states it: `not` of the one key, and a description. */
function isPrototypeRule(rule: unknown): boolean {
  if (rule === null || typeof rule !== 'object' || Array.isArray(rule)) return false
  const { not, ...rest } = rule as Record<string, unknown>
  if (not === null || typeof not !== 'object' || Array.isArray(not)) return false
  const keys = Object.keys(not)
  return (
    keys.length === 1 &&
    (not as Record<string, unknown>).const === '__proto__' &&
    Object.keys(rest).every((k) => k === 'description')
  )
}

/** A copy of `schema` without the prototype-key rule, wherever src/auth/route-docs.ts puts it. */
export function withoutPrototypeRule(schema: unknown): unknown {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema
  const source = schema as Record<string, unknown>
  const out: Record<string, unknown> = { ...source }
  if (isPrototypeRule(source.propertyNames)) delete out.propertyNames
  for (const key of ['properties', 'patternProperties'] as const) {
    const map = source[key]
    if (map !== null && typeof map === 'object' && !Array.isArray(map))
      out[key] = Object.fromEntries(Object.entries(map).map(([name, s]) => [name, withoutPrototypeRule(s)]))
  }
  for (const key of ['items', 'additionalProperties'] as const)
    if (source[key] !== null && typeof source[key] === 'object') out[key] = withoutPrototypeRule(source[key])
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const list = source[key]
    if (Array.isArray(list)) out[key] = list.map((s) => withoutPrototypeRule(s))
  }
  return out
}
