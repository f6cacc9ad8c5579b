import type { Ajv } from 'ajv'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'

/**
 * Keywords OpenAPI adds to JSON Schema for documentation (Schema Object §4.8.24): Fastify's Ajv runs
 * in strict mode and refuses a schema with a keyword it does not know, so `Type.String({ example:
 * 'it_1' })` on an application's route would stop the server at start-up. Declared to Ajv, they are
 * ignored by validation and kept for the document. (`deprecated`, `readOnly`, `writeOnly` and
 * `examples` are JSON Schema's own and known to Ajv.)
 */
export const OPENAPI_KEYWORDS = ['example', 'externalDocs', 'xml', 'discriminator'] as const

type AjvOptions = NonNullable<FastifyServerOptions['ajv']>

/**
 * Fastify's `ajv` server option with the OpenAPI keywords declared, merged into the application's own
 * (`discriminator` is left to Ajv when its own discriminator support is turned on), plus a plugin
 * that declares every `x-*` extension keyword an application's route uses (`x-internal`, ...);
 * `collect` must see the routes (an `onRoute` hook, registered before them).
 */
export function openApiAjvOptions(own: AjvOptions = {}): {
  ajv: AjvOptions
  collect: (app: FastifyInstance) => void
} {
  const custom = (own.customOptions ?? {}) as Record<string, unknown>
  const keywords = OPENAPI_KEYWORDS.filter((k) => !(k === 'discriminator' && custom.discriminator === true))
  const given = Array.isArray(custom.keywords) ? (custom.keywords as Array<string | { keyword: string }>) : []
  const instances = new Set<Ajv>()
  const extensions = new Set<string>()
  const declare = (ajv: Ajv, name: string) => {
    if (!ajv.getKeyword(name)) ajv.addKeyword(name)
  }
  const plugin = (ajv: Ajv) => {
    instances.add(ajv)
    for (const name of extensions) declare(ajv, name)
    return ajv
  }
  return {
    ajv: {
      ...own,
      customOptions: {
        ...custom,
        keywords: [
          ...given,
          ...keywords.filter((k) => !given.some((g) => (typeof g === 'string' ? g : g.keyword) === k)),
        ],
      },
      plugins: [...(own.plugins ?? []), plugin],
    },
    collect: (app) => {
      app.addHook('onRoute', (route) => {
        for (const name of extensionKeywords(route.schema)) {
          extensions.add(name)
          for (const ajv of instances) declare(ajv, name)
        }
      })
    },
  }
}

/** Every `x-*` key anywhere in a route's schemas. */
function extensionKeywords(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) extensionKeywords(v, out)
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      if (k.startsWith('x-')) out.add(k)
      extensionKeywords(v, out)
    }
  return out
}
