import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { homedir } from 'node:os'
import { delimiter, join } from 'node:path'

/** Environment variable naming the Supabase Auth server binary to run (`none`: run none). */
export const BINARY_ENV = 'AUTHGATE_SUPABASE_AUTH_BIN'
/** Environment variable naming a Supabase Auth source tree, for the tests that compare with it. */
export const SOURCE_DIR_ENV = 'AUTHGATE_SUPABASE_AUTH_SOURCE_DIR'

/** The Supabase Auth commit the suite is written against and `npm run backend:build` builds. */
export const SUPABASE_AUTH_COMMIT = 'bc32168e13fdc928c98b449fc76bc3fdb9a293c5'
export const SUPABASE_AUTH_SHORT = SUPABASE_AUTH_COMMIT.slice(0, 12)
export const SUPABASE_AUTH_VERSION = `v2.196.0-${SUPABASE_AUTH_SHORT}`
/** The `go` line of that commit's go.mod: the oldest Go that builds it without fetching a toolchain. */
export const SUPABASE_AUTH_GO_VERSION = '1.26.6'

/**
 * Every skip for want of Supabase Auth starts with these words, so that a CI run can tell them from
 * skips for want of anything else (Redis, PostgreSQL, Chromium), which it refuses.
 */
export const ABSENCE = 'needs Supabase Auth'

/**
 * Where `npm run backend:build` keeps its build: the user's cache, not the clone, so that every
 * clone on the machine (CI's fresh ones included) finds a server built once.
 */
export function buildDir(env: NodeJS.ProcessEnv = process.env): string {
  const cache =
    env.XDG_CACHE_HOME !== undefined && env.XDG_CACHE_HOME !== '' ? env.XDG_CACHE_HOME : join(homedir(), '.cache')
  return join(cache, 'authgate', `supabase-auth-${SUPABASE_AUTH_SHORT}`)
}
export const builtBinary = (env: NodeJS.ProcessEnv = process.env): string => join(buildDir(env), 'supabase-auth')
/** The verified upstream source the build was made from, kept beside the binary. */
export const builtSource = (env: NodeJS.ProcessEnv = process.env): string => join(buildDir(env), 'src')

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
  /** What `npm run backend:build` produces (default builtBinary(env)). */
  builtBinary?: string
  /** How Go is found, for the advice when no binary is (default findGo). */
  findGo?: (env: NodeJS.ProcessEnv) => Promise<string | undefined>
}

/**
 * The Supabase Auth server to run: AUTHGATE_SUPABASE_AUTH_BIN when set (and then nothing else;
 * `none` runs none), else what `npm run backend:build` built, else `supabase-auth` or `gotrue` on
 * PATH. When there is none, the reason starts with ABSENCE and says how to get one.
 */
export async function findSupabaseAuthBinary(
  env: NodeJS.ProcessEnv = process.env,
  options: BinaryLookupOptions = {},
): Promise<BinaryLookup> {
  const configured = env[BINARY_ENV]
  if (configured === 'none') return { reason: `${ABSENCE}: ${BINARY_ENV}=none` }
  if (configured !== undefined && configured !== '') {
    if (await isExecutable(configured)) return { path: configured }
    return {
      reason: `${ABSENCE}: ${BINARY_ENV}=${configured} is not an executable file (unset it to use npm run backend:build's)`,
    }
  }
  const built = options.builtBinary ?? builtBinary(env)
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
      `${ABSENCE}: no server binary (looked at ${BINARY_ENV}, ${built}, ` +
      `${NAMES_ON_PATH.join(' and ')} on PATH); ${build}`,
  }
}
