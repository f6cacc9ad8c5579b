// Runs a real Supabase Auth server in the foreground as authgate's development backend,
// with the same settings as the end-to-end tests. Usage: npm run backend:dev -- --help
import { spawn } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { signServiceRoleJwt } from './supabase-auth/jwt.ts'
import { authDatabaseUrl, postgresUnavailableReason, prepareAuthDatabase } from './supabase-auth/postgres.ts'
import { BINARY_ENV, findSupabaseAuthBinary } from './supabase-auth/binary.ts'
import { DEV_SUPABASE_AUTH_PORT, supabaseAuthEnv, TEST_PHONE_OTPS } from './supabase-auth/env.ts'
import { loadOrCreateKeys, repoRoot } from './dev/keys.ts'
import type { DevKeys } from './dev/keys.ts'

const HELP = `Usage: npm run backend:dev -- [options]

Prepares a PostgreSQL database and runs Supabase Auth (migrations, then the API) in the
foreground, configured to sit behind authgate: passkeys, OAuth 2.1 server with dynamic client
registration, anonymous sign-in, phone sign-in with fixed test OTPs, a fake GitHub provider,
email auto-confirmation without SMTP, an ES256 signing key. Stop it with Ctrl-C.

Needs a Supabase Auth server binary (${BINARY_ENV}, else what npm run backend:build built, else
supabase-auth / gotrue on PATH) and PostgreSQL reachable as superuser (PGHOST, PGPORT, PGUSER;
default 127.0.0.1:5432, postgres).

Options:
  --port <n>          port on 127.0.0.1 (default ${DEV_SUPABASE_AUTH_PORT}, as npm run dev's)
  --public-url <url>  authgate's public base, prefix included (default http://localhost:8080/auth);
                      becomes API_EXTERNAL_URL, the JWT issuer and the WebAuthn origin
  --site-url <url>    GOTRUE_SITE_URL (default: origin of --public-url)
  --database <name>   database to use (default authgate_dev)
  --fresh             drop and recreate the database first
  --binary <path>     Supabase Auth binary (default: ${BINARY_ENV}, then npm run backend:build's, then PATH)
  --env KEY=VALUE     extra or overriding server variable; repeatable
  -h, --help          show this help

The JWT secret and signing key are kept in .cache/supabase-auth-dev/keys.json so tokens
survive restarts; delete that file to rotate them.`

function parseExtraEnv(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {}
  for (const pair of pairs) {
    const separator = pair.indexOf('=')
    if (separator <= 0) throw new Error(`--env expects KEY=VALUE, got ${JSON.stringify(pair)}`)
    env[pair.slice(0, separator)] = pair.slice(separator + 1)
  }
  return env
}

function describeValue(name: string, value: string, keys: DevKeys): string {
  if (name === 'GOTRUE_JWT_KEYS') return `<${keys.signingJwk.alg} private key, kid ${keys.signingJwk.kid}>`
  return JSON.stringify(value)
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: String(DEV_SUPABASE_AUTH_PORT) },
      'public-url': { type: 'string', default: 'http://localhost:8080/auth' },
      'site-url': { type: 'string' },
      database: { type: 'string', default: 'authgate_dev' },
      fresh: { type: 'boolean', default: false },
      binary: { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    console.log(HELP)
    return 0
  }

  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`invalid --port ${values.port}`)
  const extraEnv = parseExtraEnv(values.env)

  const binary = await findSupabaseAuthBinary(
    values.binary === undefined ? process.env : { ...process.env, [BINARY_ENV]: values.binary },
  )
  if ('reason' in binary) throw new Error(binary.reason)
  const postgresProblem = await postgresUnavailableReason()
  if (postgresProblem !== undefined) throw new Error(postgresProblem)

  await prepareAuthDatabase(values.database, { fresh: values.fresh })
  const keys = await loadOrCreateKeys()
  const env = {
    ...supabaseAuthEnv({
      port,
      publicUrl: values['public-url'],
      siteUrl: values['site-url'],
      databaseUrl: authDatabaseUrl(values.database),
      jwtSecret: keys.jwtSecret,
      signingJwk: keys.signingJwk,
    }),
    GOTRUE_LOG_LEVEL: 'info',
    ...extraEnv,
  }

  console.log(`Database ${values.database} prepared${values.fresh ? ' (fresh)' : ''}.`)
  console.log(`Running ${binary.path} (no sub-command: migrate, then serve) with:`)
  for (const [name, value] of Object.entries(env)) console.log(`  ${name}=${describeValue(name, value, keys)}`)
  console.log(
    `\nListening on http://127.0.0.1:${port}; point authgate at it: AUTHGATE_BACKEND_URL=http://127.0.0.1:${port}`,
  )
  console.log(
    `Test phone numbers (OTP): ${Object.entries(TEST_PHONE_OTPS)
      .map(([p, otp]) => `+${p} (${otp})`)
      .join(', ')}`,
  )
  console.log(`Service-role token (admin API, valid 24 h): ${signServiceRoleJwt(keys.jwtSecret, 86_400)}\n`)

  // Started in an empty directory of our own: the server would otherwise read a stray .env file.
  const workDir = join(repoRoot, '.cache', 'supabase-auth-dev', 'run')
  await mkdir(workDir, { recursive: true })
  const child = spawn(binary.path, [], {
    cwd: workDir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: 'inherit',
  })
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => child.kill(signal))
  }
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 0)))
  })
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`backend:dev: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  },
)
