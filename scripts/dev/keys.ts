// The JWT secret and signing key of the development Supabase Auth, shared by `npm run backend:dev`
// and `npm run dev`: kept on disk so that tokens and sessions survive restarts.
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generateJwtSecret, generateSigningJwk } from '../supabase-auth/jwt.ts'
import type { SigningJwk } from '../supabase-auth/jwt.ts'

export interface DevKeys {
  jwtSecret: string
  signingJwk: SigningJwk
}

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const DEV_KEYS_FILE = join(repoRoot, '.cache', 'supabase-auth-dev', 'keys.json')

export async function loadOrCreateKeys(file = DEV_KEYS_FILE): Promise<DevKeys> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as DevKeys
  } catch {
    const keys: DevKeys = { jwtSecret: generateJwtSecret(), signingJwk: generateSigningJwk() }
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, JSON.stringify(keys, null, 2), { mode: 0o600 })
    return keys
  }
}
