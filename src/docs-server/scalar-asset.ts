import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'

/**
 * The reference page's script: the self-contained browser build of `@scalar/api-reference`
 * (one file, no chunks, no CDN), served by authgate itself. The package's `exports` map does not
 * expose the file, so it is found next to the package's resolved entry point.
 */
export interface ScalarAsset {
  version: string
  /** File name with the version, so the URL can be cached forever. */
  fileName: string
  load(): Promise<{ raw: Buffer; gzip: Buffer; etag: string }>
}

const PACKAGE = '@scalar/api-reference'

export function locateScalar(): { file: string; version: string } {
  let entry: URL
  try {
    entry = new URL(import.meta.resolve(PACKAGE))
  } catch (err) {
    throw new Error(`${PACKAGE} is not installed; it provides the reference page (${(err as Error).message})`, {
      cause: err,
    })
  }
  // entry: <pkg>/dist/index.js
  const file = fileURLToPath(new URL('./browser/standalone.js', entry))
  const pkg = fileURLToPath(new URL('../package.json', entry))
  if (!existsSync(file)) throw new Error(`${PACKAGE}: ${file} is missing; the reference page needs the browser build`)
  const version = (JSON.parse(readFileSync(pkg, 'utf8')) as { version?: string }).version ?? '0'
  return { file, version }
}

export function scalarAsset(): ScalarAsset {
  const { file, version } = locateScalar()
  let loaded: Promise<{ raw: Buffer; gzip: Buffer; etag: string }> | undefined
  return {
    version,
    fileName: `scalar-api-reference-${version.replace(/[^A-Za-z0-9.-]/g, '_')}.js`,
    // Read and compressed once, on first use: 4 MB of script, about 1 MB gzipped.
    load() {
      loaded ??= (async () => {
        const raw = await readFile(file)
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
