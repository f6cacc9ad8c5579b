import { createHash, randomBytes } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { resolveOpenApiConfig, type OpenApiOptions } from './config.ts'
import { DEFAULT_TITLE } from '../openapi/document.ts'
import { buildOpenApiDocument } from './document.ts'
import { contentSecurityPolicy, docsPageHtml, type DocsPageOptions } from './docs-page.ts'
import { toOpenApi30 } from '../openapi/openapi30.ts'
import type { RouteRegistry } from '../openapi/registry.ts'
import { scalarAsset } from './scalar-asset.ts'
import { forTryIt } from './try-it.ts'
import type { OpenApiDocument } from '../openapi/types.ts'

export interface RegisterDocsOptions extends OpenApiOptions {
  /** Extra Scalar settings (theme, layout, ...); the privacy settings cannot be overridden. */
  scalar?: Record<string, unknown>
}

/** The paths `registerDocs` serves, as clients see them (prefix of the instance included). */
export interface DocsRoutes {
  openapiPath: string
  openapi30Path: string | false
  docsPath: string | false
  scriptPath: string | false
}

/**
 * A part of the document that does not come from the routes (PostgREST's description of the
 * tables, src/services/rest-document.ts): merged into both renderings, which are built again when
 * its version changes.
 */
export interface DocumentExtension {
  readonly version: number
  apply(doc: OpenApiDocument): OpenApiDocument
}

// Hidden from the document: they describe the documentation, not the API.
const hidden = { schema: { hide: true } }

function joinPath(prefix: string, path: string): string {
  if (prefix === '') return path
  return path === '/' ? prefix : prefix + path
}

interface Rendered {
  version: string
  body: Buffer
  etag: string
  /** The same bytes gzipped once (the document compresses about 7:1), with an ETag of its own. */
  gzip: Buffer
  gzipEtag: string
}

/**
 * The serialised document and its ETag, rebuilt only when the registry has recorded a route since
 * the last build (routes can only be added before the server starts, so in practice once).
 */
function cachedRendering(
  registry: RouteRegistry,
  build: () => OpenApiDocument,
  extension: DocumentExtension | undefined,
): () => Rendered {
  let cached: Rendered | undefined
  return () => {
    const version = `${registry.version}:${extension?.version ?? 0}`
    if (cached?.version !== version) {
      const body = Buffer.from(JSON.stringify(build()))
      const hash = createHash('sha256').update(body).digest('base64url').slice(0, 27)
      cached = { version, body, etag: `"${hash}"`, gzip: gzipSync(body), gzipEtag: `"${hash}-gzip"` }
    }
    return cached
  }
}

const GZIP = /\bgzip\b/

function sendJson(request: FastifyRequest, reply: FastifyReply, doc: Rendered): FastifyReply {
  const gzip = GZIP.test(String(request.headers['accept-encoding'] ?? ''))
  const etag = gzip ? doc.gzipEtag : doc.etag
  reply.header('cache-control', 'no-cache')
  reply.header('etag', etag)
  reply.header('vary', 'accept-encoding')
  reply.header('x-content-type-options', 'nosniff')
  if (request.headers['if-none-match'] === etag) return reply.code(304).send()
  reply.type('application/json; charset=utf-8')
  if (!gzip) return reply.send(doc.body)
  reply.header('content-encoding', 'gzip')
  return reply.send(doc.gzip)
}

/**
 * Serves the OpenAPI 3.1 document, its 3.0 rendering and the reference page on `app`, built from
 * `registry`; the bytes are cached until a route is added, so routes registered after this call still appear.
 */
export function registerDocs(
  app: FastifyInstance,
  registry: RouteRegistry,
  options: RegisterDocsOptions = {},
  extension?: DocumentExtension,
): DocsRoutes {
  const config = resolveOpenApiConfig(options)
  const prefix = app.prefix ?? ''
  const routes: DocsRoutes = {
    openapiPath: joinPath(prefix, config.openapiPath),
    openapi30Path: config.openapi30Path === false ? false : joinPath(prefix, config.openapi30Path),
    docsPath: config.docsPath === false ? false : joinPath(prefix, config.docsPath),
    scriptPath: false,
  }
  if (!config.enabled)
    return { openapiPath: routes.openapiPath, openapi30Path: false, docsPath: false, scriptPath: false }

  const build = () =>
    forTryIt(
      (extension?.apply.bind(extension) ?? ((doc: OpenApiDocument) => doc))(
        buildOpenApiDocument(registry.entries(), {
          ...options,
          sharedSchemas: { ...app.getSchemas(), ...(options.sharedSchemas ?? {}) },
        }),
      ),
      // Read when the document is first asked for: the plugin may be registered after this call.
      {
        prefix: app.hasDecorator('authgate') ? app.authgate.config.prefix : undefined,
        exampleUser: options.exampleUser,
      },
    )

  const openapi31 = cachedRendering(registry, build, extension)
  app.get(config.openapiPath, hidden, async (request, reply) => sendJson(request, reply, openapi31()))
  if (config.openapi30Path !== false) {
    const openapi30 = cachedRendering(registry, () => toOpenApi30(build()), extension)
    app.get(config.openapi30Path, hidden, async (request, reply) => sendJson(request, reply, openapi30()))
  }

  if (config.docsPath !== false) {
    const asset = scalarAsset()
    const scriptRoute = config.docsPath === '/' ? `/${asset.fileName}` : `${config.docsPath}/${asset.fileName}`
    routes.scriptPath = joinPath(prefix, scriptRoute)

    const connectOrigins = [
      ...new Set(
        (options.servers ?? []).flatMap((s) => {
          try {
            return /^https?:\/\//i.test(s.url) ? [new URL(s.url).origin] : []
          } catch {
            return []
          }
        }),
      ),
    ]
    const page: DocsPageOptions = {
      title: options.info?.title || DEFAULT_TITLE,
      pagePath: routes.docsPath as string,
      scriptPath: routes.scriptPath as string,
      documentPath: routes.openapiPath,
      connectOrigins,
      scalar: options.scalar,
    }

    app.get(config.docsPath, hidden, async (request, reply) => {
      const nonce = randomBytes(18).toString('base64')
      const requestPath = request.url.split('?')[0] ?? page.pagePath
      reply.header('content-security-policy', contentSecurityPolicy(nonce, connectOrigins))
      reply.header('cache-control', 'no-store')
      reply.header('x-content-type-options', 'nosniff')
      reply.header('referrer-policy', 'no-referrer')
      reply.header('x-frame-options', 'SAMEORIGIN')
      return reply.type('text/html; charset=utf-8').send(docsPageHtml(page, requestPath, nonce))
    })

    app.get(scriptRoute, hidden, async (request, reply) => {
      const file = await asset.load()
      // The file name carries the package version: a new version is a new URL.
      reply.header('cache-control', 'public, max-age=31536000, immutable')
      reply.header('etag', file.etag)
      reply.header('x-content-type-options', 'nosniff')
      reply.header('vary', 'accept-encoding')
      reply.type('text/javascript; charset=utf-8')
      if (request.headers['if-none-match'] === file.etag) return reply.code(304).send()
      if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
        reply.header('content-encoding', 'gzip')
        return reply.send(file.gzip)
      }
      return reply.send(file.raw)
    })
  }
  return routes
}
