// The JWT secret and signing key of the development Supabase Auth, shared by `npm run backend:dev`
// and `npm run dev`: kept on disk so that tokens and sessions survive restarts.
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generateJwtSecret, generateSigningJwk, signAnonJwt } from '../supabase-auth/jwt.ts'
import type { SigningJwk } from '../supabase-auth/jwt.ts'

export interface DevKeys {
  jwtSecret: string
  signingJwk: SigningJwk
  /** The anon key supabase-js is given (createClient's second argument); made once, then kept. */
  anonKey: string
}

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const DEV_KEYS_FILE = join(repoRoot, '.cache', 'supabase-auth-dev', 'keys.json')

export async function loadOrCreateKeys(file = DEV_KEYS_FILE): Promise<DevKeys> {
  const stored = await readFile(file, 'utf8').then(
    (text) => JSON.parse(text) as Partial<DevKeys>,
    () => undefined,
  )
  if (stored?.jwtSecret !== undefined && stored.signingJwk !== undefined && stored.anonKey !== undefined)
    return stored as DevKeys
  // A file of an earlier version has no anon key yet: one is added, the signing keys kept.
  const jwtSecret = stored?.jwtSecret ?? generateJwtSecret()
  const signingJwk = stored?.signingJwk ?? generateSigningJwk()
  const keys: DevKeys = { jwtSecret, signingJwk, anonKey: signAnonJwt(signingJwk, 'authgate-dev') }
  await mkdir(dirname(file), { recursive: true })
  await writeFile(file, JSON.stringify(keys, null, 2), { mode: 0o600 })
  return keys
}
