import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Environment variable naming the Supabase Auth server binary to run. */
export const BINARY_ENV = 'AUTHGATE_SUPABASE_AUTH_BIN'

/** The Supabase Auth commit the suite is written against and `npm run backend:build` builds. */
export const SUPABASE_AUTH_COMMIT = 'bc32168e13fd'
export const SUPABASE_AUTH_MODULE = 'github.com/supabase/auth'
/** The `go` line of that commit's go.mod: the oldest Go that builds it without fetching a toolchain. */
export const SUPABASE_AUTH_GO_VERSION = '1.26.6'

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * Where `npm run backend:build` (and CI, through the source snapshot's own build script given the
 * same directory) puts the server: `<dir>/bin/supabase-auth`, plus a `.built-<commit>` stamp once
 * the build finished.
 */
export const BUILD_DIR = join(repoRoot, '.cache', 'supabase-auth')
export const BUILT_BINARY = join(BUILD_DIR, 'bin', 'supabase-auth')

/** Names an installed Supabase Auth server may have on PATH (the bare `auth` is too generic to trust). */
const NAMES_ON_PATH = ['supabase-auth', 'gotrue']

/** Where Go's official tarball installs it; CI machines often have it there without it being on PATH. */
const GO_FALLBACKS = ['/usr/local/go/bin/go']

export async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

async function findOnPath(names: string[], env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const directory of (env.PATH ?? '').split(delimiter)) {
    if (directory === '') continue
    for (const name of names) {
      const candidate = join(directory, name)
      if (await isExecutable(candidate)) return candidate
    }
  }
  return undefined
}

/** The `go` command: PATH first, then the usual install location. */
export async function findGo(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const onPath = await findOnPath(['go'], env)
  if (onPath !== undefined) return onPath
  for (const candidate of GO_FALLBACKS) {
    if (await isExecutable(candidate)) return candidate
  }
  return undefined
}

export type BinaryLookup = { path: string } | { reason: string }

export interface BinaryLookupOptions {
  /** What `npm run backend:build` produces (default BUILT_BINARY). */
  builtBinary?: string
  /** How Go is found, for the advice when no binary is (default findGo). */
  findGo?: (env: NodeJS.ProcessEnv) => Promise<string | undefined>
}

/**
 * The Supabase Auth server to run: AUTHGATE_SUPABASE_AUTH_BIN when set (and then nothing else),
 * else what `npm run backend:build` built, else `supabase-auth` or `gotrue` on PATH. When there is
 * none, the reason says how to get one, including installing Go when it is missing too.
 */
export async function findSupabaseAuthBinary(
  env: NodeJS.ProcessEnv = process.env,
  options: BinaryLookupOptions = {},
): Promise<BinaryLookup> {
  const configured = env[BINARY_ENV]
  if (configured !== undefined && configured !== '') {
    if (await isExecutable(configured)) return { path: configured }
    return { reason: `${BINARY_ENV}=${configured} is not an executable file (unset it to use npm run backend:build's)` }
  }
  const built = options.builtBinary ?? BUILT_BINARY
  if (await isExecutable(built)) return { path: built }
  const onPath = await findOnPath(NAMES_ON_PATH, env)
  if (onPath !== undefined) return { path: onPath }

  const go = await (options.findGo ?? findGo)(env)
  const build =
    go === undefined
      ? `Go is not installed either: install Go >= ${SUPABASE_AUTH_GO_VERSION} (https://go.dev/dl/), then run npm run backend:build`
      : 'run npm run backend:build'
  return {
    reason:
      `no Supabase Auth server binary (looked at ${BINARY_ENV}, ${built}, ` +
      `${NAMES_ON_PATH.join(' and ')} on PATH); ${build}`,
  }
}
