import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { delimiter, join } from 'node:path'

/** Environment variable naming the Supabase Auth server binary to run. */
export const BINARY_ENV = 'AUTHGATE_SUPABASE_AUTH_BIN'

/** Names an installed Supabase Auth server may have on PATH (the bare `auth` is too generic to trust). */
const NAMES_ON_PATH = ['supabase-auth', 'gotrue']

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

export type BinaryLookup = { path: string } | { reason: string }

/**
 * This project does not build Supabase Auth (its module is not available from the Go module
 * proxy this project may use), so it runs a binary the developer provides.
 */
export async function findSupabaseAuthBinary(env: NodeJS.ProcessEnv = process.env): Promise<BinaryLookup> {
  const configured = env[BINARY_ENV]
  if (configured !== undefined && configured !== '') {
    if (await isExecutable(configured)) return { path: configured }
    return { reason: `${BINARY_ENV}=${configured} is not an executable file` }
  }
  for (const directory of (env.PATH ?? '').split(delimiter)) {
    if (directory === '') continue
    for (const name of NAMES_ON_PATH) {
      const candidate = join(directory, name)
      if (await isExecutable(candidate)) return { path: candidate }
    }
  }
  return {
    reason:
      `no Supabase Auth server binary: set ${BINARY_ENV} to its path ` +
      `or put it on PATH as ${NAMES_ON_PATH.join(' or ')}`,
  }
}
