import { AuthgateConfigError, envValue, OFF_WORDS, type Env } from '../config/env.ts'
import { parseServePath } from '../config/serve-path.ts'
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

function parseText(variable: string, raw: string, max: number): string {
  const v = raw.trim()
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(v)) throw new AuthgateConfigError(variable, 'must not contain control characters')
  if (v.length > max) throw new AuthgateConfigError(variable, `must be at most ${max} characters, got ${v.length}`)
  return v
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
  const openapi30Path =
    options.openapi30Path === false
      ? false
      : parseServePath('openapi30Path', options.openapi30Path ?? derive30Path(openapiPath))
  const docsPath =
    options.docsPath === false ? false : parseServePath('docsPath', options.docsPath ?? DEFAULT_DOCS_PATH)
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
  const get = (name: string) => envValue(env, name)
  const out: OpenApiOptions = {}
  const openapi = get('AUTHGATE_OPENAPI_PATH')
  if (openapi !== undefined && OFF_WORDS.has(openapi.toLowerCase())) out.enabled = false
  else if (openapi !== undefined) out.openapiPath = parseServePath('AUTHGATE_OPENAPI_PATH', openapi)

  const openapi30 = get('AUTHGATE_OPENAPI30_PATH')
  if (openapi30 !== undefined)
    out.openapi30Path = OFF_WORDS.has(openapi30.toLowerCase())
      ? false
      : parseServePath('AUTHGATE_OPENAPI30_PATH', openapi30)

  const docs = get('AUTHGATE_DOCS_PATH')
  if (docs !== undefined)
    out.docsPath = OFF_WORDS.has(docs.toLowerCase()) ? false : parseServePath('AUTHGATE_DOCS_PATH', docs)

  const title = get('AUTHGATE_API_TITLE')
  const version = get('AUTHGATE_API_VERSION')
  if (title !== undefined || version !== undefined) {
    out.info = {}
    if (title !== undefined) out.info.title = parseText('AUTHGATE_API_TITLE', title, 200)
    if (version !== undefined) out.info.version = parseText('AUTHGATE_API_VERSION', version, 64)
  }

  const user = get('AUTHGATE_DOCS_EXAMPLE_USER')
  if (user !== undefined) {
    const colon = user.indexOf(':')
    const email = user.slice(0, colon).trim()
    if (colon <= 0 || !email.includes('@') || colon === user.length - 1)
      throw new AuthgateConfigError(
        'AUTHGATE_DOCS_EXAMPLE_USER',
        'expected email:password, e.g. dev@example.com:secret',
      )
    out.exampleUser = { email, password: user.slice(colon + 1) }
  }

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
