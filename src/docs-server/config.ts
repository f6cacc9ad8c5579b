import { AuthgateConfigError, envValue, type Env } from '../config/env.ts'
import { parseServePath } from '../config/serve-path.ts'
import { isRecord } from '../core/is-record.ts'
import { pathOrOff, textWith, type SettingValue } from '../config/values.ts'
import { refuseUnknownOptions } from '../config/known-options.ts'
import { settingValue } from '../config/schema.ts'
import type { RouteRegistry } from '../openapi/registry.ts'
import type { DocumentOptions } from '../openapi/types.ts'

/**
 * Where the documents and the reference page are served, from the environment
 * (`AUTHGATE_OPENAPI_PATH`, `AUTHGATE_OPENAPI30_PATH`, `AUTHGATE_DOCS_PATH`, `AUTHGATE_API_TITLE`,
 * `AUTHGATE_API_VERSION`) or from library options, which can say more (info, servers, security
 * schemes, tags).
 */
export interface OpenApiOptions extends DocumentOptions {
  /** `false` serves neither the documents nor the page (the registry still records routes). Default true. */
  enabled?: boolean
  /** The OpenAPI 3.1 document. Default `/openapi.json`. */
  openapiPath?: string
  /** The 3.0.3 rendering; `false` to not serve it. Default: the document path with `-3.0` before `.json`. */
  openapi30Path?: string | false
  /** The reference page; `false` to not serve it. Default `/docs`. */
  docsPath?: string | false
  /** An existing registry, e.g. one the application created on its root instance before registering authgate. */
  registry?: RouteRegistry
  /**
   * A development account the auth routes' sign-in examples are filled with (src/docs-server/try-it.ts),
   * so that the page's "try it" signs in as it. Published in the document: development only.
   */
  exampleUser?: { email: string; password: string }
}

export interface ResolvedOpenApiConfig {
  enabled: boolean
  openapiPath: string
  openapi30Path: string | false
  docsPath: string | false
}

// The defaults are the settings schema's, so the default shown by --help is the default used.
export const DEFAULT_OPENAPI_PATH = settingValue({}, 'AUTHGATE_OPENAPI_PATH')!
export const DEFAULT_DOCS_PATH = settingValue({}, 'AUTHGATE_DOCS_PATH')!

/** `/openapi.json` → `/openapi-3.0.json`; `/spec` → `/spec-3.0`. */
export function derive30Path(openapiPath: string): string {
  return openapiPath.endsWith('.json')
    ? `${openapiPath.slice(0, -'.json'.length)}-3.0.json`
    : `${openapiPath.replace(/\/$/, '')}-3.0`
}

/** Free text of at most `max` characters, without control characters. */
const shortText = (max: number): SettingValue<string> =>
  textWith((variable, raw) => {
    const v = raw.trim()
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(v)) throw new AuthgateConfigError(variable, 'must not contain control characters')
    if (v.length > max) throw new AuthgateConfigError(variable, `must be at most ${max} characters, got ${v.length}`)
    return v
  })

type ExampleUser = NonNullable<OpenApiOptions['exampleUser']>

/** `email:password` in text; `{ email, password }` in code. */
const exampleUser: SettingValue<ExampleUser> = {
  parse: (variable, raw) => {
    const colon = raw.indexOf(':')
    const email = raw.slice(0, colon).trim()
    if (colon <= 0 || !email.includes('@') || colon === raw.length - 1)
      throw new AuthgateConfigError(variable, 'expected email:password, e.g. dev@example.com:secret')
    return { email, password: raw.slice(colon + 1) }
  },
  check: (name, v) => {
    if (!isRecord(v) || typeof v.email !== 'string' || !v.email.includes('@') || typeof v.password !== 'string')
      throw new AuthgateConfigError(
        name,
        'expected { email, password }, e.g. { email: "dev@example.com", password: "secret" }',
      )
    return { email: v.email, password: v.password }
  },
}

/**
 * One descriptor per documentation setting: its variable (default and help in
 * src/config/schema.ts) and its value type, which parses the variable and checks code's value.
 */
const DOC_SETTINGS = {
  openapiPath: { variable: 'AUTHGATE_OPENAPI_PATH', value: pathOrOff },
  openapi30Path: { variable: 'AUTHGATE_OPENAPI30_PATH', value: pathOrOff },
  docsPath: { variable: 'AUTHGATE_DOCS_PATH', value: pathOrOff },
  title: { variable: 'AUTHGATE_API_TITLE', value: shortText(200) },
  version: { variable: 'AUTHGATE_API_VERSION', value: shortText(64) },
  exampleUser: { variable: 'AUTHGATE_DOCS_EXAMPLE_USER', value: exampleUser },
} as const

type DocSetting = keyof typeof DOC_SETTINGS
type DocValue<K extends DocSetting> = (typeof DOC_SETTINGS)[K]['value'] extends SettingValue<infer T> ? T : never

/** A setting the environment gives, parsed; undefined when not given (its default is the resolver's). */
function given<K extends DocSetting>(env: Env, key: K): DocValue<K> | undefined {
  const { variable, value } = DOC_SETTINGS[key]
  const raw = envValue(env, variable)
  return raw === undefined ? undefined : ((value as SettingValue<unknown>).parse(variable, raw) as DocValue<K>)
}

// Every key of OpenApiOptions, checked complete by the type (`scalar` is registerDocs' own).
const OPENAPI_OPTIONS = Object.keys({
  enabled: true,
  openapiPath: true,
  openapi30Path: true,
  docsPath: true,
  registry: true,
  exampleUser: true,
  info: true,
  servers: true,
  securitySchemes: true,
  tags: true,
  tagDescriptions: true,
  tagRules: true,
  sharedSchemas: true,
} satisfies Record<keyof OpenApiOptions, true>)

/** Checks paths and that no two of them coincide; fills defaults; refuses an unknown option by name. */
export function resolveOpenApiConfig(options: OpenApiOptions = {}): ResolvedOpenApiConfig {
  refuseUnknownOptions(options, [...OPENAPI_OPTIONS, 'scalar'], 'openapi.')
  const openapiPath = parseServePath('openapiPath', options.openapiPath ?? DEFAULT_OPENAPI_PATH)
  const openapi30Path = pathOrOff.check('openapi30Path', options.openapi30Path ?? derive30Path(openapiPath))
  const docsPath = pathOrOff.check('docsPath', options.docsPath ?? DEFAULT_DOCS_PATH)
  if (options.exampleUser !== undefined) exampleUser.check('exampleUser', options.exampleUser)
  const used = [openapiPath, openapi30Path, docsPath].filter((p): p is string => p !== false)
  if (new Set(used).size !== used.length)
    throw new AuthgateConfigError(
      'openapiPath',
      `the document, 3.0 document and page paths must differ, got ${used.join(', ')}`,
    )
  return { enabled: options.enabled !== false, openapiPath, openapi30Path, docsPath }
}

/**
 * The documentation settings the environment gives. `off` as a path disables what it serves
 * (`AUTHGATE_OPENAPI_PATH=off` turns off the documents and the page, which needs them).
 */
export function loadOpenApiConfig(env: Env = process.env): OpenApiOptions {
  const out: OpenApiOptions = {}
  const openapi = given(env, 'openapiPath')
  if (openapi === false) out.enabled = false
  else if (openapi !== undefined) out.openapiPath = openapi
  const openapi30 = given(env, 'openapi30Path')
  if (openapi30 !== undefined) out.openapi30Path = openapi30
  const docs = given(env, 'docsPath')
  if (docs !== undefined) out.docsPath = docs

  const title = given(env, 'title')
  const version = given(env, 'version')
  if (title !== undefined || version !== undefined) {
    out.info = {}
    if (title !== undefined) out.info.title = title
    if (version !== undefined) out.info.version = version
  }
  const user = given(env, 'exampleUser')
  if (user !== undefined) out.exampleUser = user

  // Name the variable that collides, not the internal option.
  try {
    resolveOpenApiConfig(out)
  } catch (err) {
    if (err instanceof AuthgateConfigError) {
      throw new AuthgateConfigError(
        'AUTHGATE_DOCS_PATH',
        `AUTHGATE_OPENAPI_PATH, AUTHGATE_OPENAPI30_PATH and AUTHGATE_DOCS_PATH must differ (${err.message})`,
      )
    }
    throw err
  }
  return out
}
