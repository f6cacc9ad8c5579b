import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import Fastify from 'fastify'

/**
 * The reference page's script: Scalar's self-contained browser build of its API reference (one
 * file, no chunks, no CDN), served by authgate itself. It comes from `@scalar/fastify-api-reference`,
 * the Fastify ecosystem's package, which carries the build inside it: about 24 MB installed, where
 * `@scalar/api-reference` pulls in 150 MB of sources and dependencies for the same file.
 *
 * That package's plugin serves the script at `<prefix>/js/scalar.js` next to a page of its own;
 * authgate serves its own hardened page (src/openapi/docs-page.ts), so the script is taken from the
 * plugin in a throwaway instance, once, through the plugin's public route.
 */
export interface ScalarAsset {
  version: string
  /** File name with the version, so the URL can be cached forever. */
  fileName: string
  load(): Promise<{ raw: Buffer; gzip: Buffer; etag: string }>
}

const PACKAGE = '@scalar/fastify-api-reference'

export function locateScalar(): { version: string } {
  let entry: URL
  try {
    entry = new URL(import.meta.resolve(PACKAGE))
  } catch (err) {
    throw new Error(`${PACKAGE} is not installed; it provides the reference page (${(err as Error).message})`, {
      cause: err,
    })
  }
  // entry: <pkg>/dist/index.js
  const pkg = new URL('../package.json', entry)
  const version = (JSON.parse(readFileSync(pkg, 'utf8')) as { version?: string }).version ?? '0'
  return { version }
}

/** The script's bytes, as the package's own plugin serves them. */
async function readScript(): Promise<Buffer> {
  const { default: scalarPlugin } = await import(PACKAGE)
  const scratch = Fastify({ logger: false })
  try {
    await scratch.register(scalarPlugin, { routePrefix: '/r', configuration: { url: '/openapi.json' } })
    const res = await scratch.inject({ method: 'GET', url: '/r/js/scalar.js' })
    if (res.statusCode !== 200 || !/javascript/.test(String(res.headers['content-type'])))
      throw new Error(`${PACKAGE} did not serve its script (status ${res.statusCode})`)
    return res.rawPayload
  } finally {
    await scratch.close()
  }
}

export function scalarAsset(): ScalarAsset {
  const { version } = locateScalar()
  let loaded: Promise<{ raw: Buffer; gzip: Buffer; etag: string }> | undefined
  return {
    version,
    fileName: `scalar-api-reference-${version.replace(/[^A-Za-z0-9.-]/g, '_')}.js`,
    // Read and compressed once, on first use: 5 MB of script, about 1 MB gzipped.
    load() {
      loaded ??= (async () => {
        const raw = await readScript()
        const gz = await promisify(gzip)(raw, { level: 9 })
        const etag = `"${createHash('sha256').update(raw).digest('base64url').slice(0, 27)}"`
        return { raw, gzip: gz, etag }
      })()
      loaded.catch(() => {
        loaded = undefined
      })
      return loaded
    },
  }
}
