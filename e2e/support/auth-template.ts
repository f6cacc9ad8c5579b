import { execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { generateJwtSecret, generateSigningJwk } from '../../scripts/supabase-auth/jwt.ts'
import {
  authDatabaseUrl,
  postgresTarget,
  prepareAuthDatabase,
  runPsql,
  type PostgresTarget,
} from '../../scripts/supabase-auth/postgres.ts'
import { supabaseAuthEnv } from '../../scripts/supabase-auth/env.ts'

const execFileAsync = promisify(execFile)

/**
 * Every Supabase Auth started by the suite would otherwise run all of its migrations into an empty
 * database (seconds each, some thirty starts a run). Instead one database per binary is migrated once,
 * by the binary's own `migrate` command, and each start gets a copy of it (`CREATE DATABASE … TEMPLATE`):
 * the server finds every migration applied and goes straight to serving.
 *
 * The template is named after the binary's content (its migrations are compiled into it), so a
 * different build migrates a template of its own and never starts on another's schema.
 */
export const TEMPLATE_PREFIX = 'authgate_tpl_'

/** The template's name for the binary at `binaryPath`: a digest of the file, not its path or date. */
export async function templateName(binaryPath: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(binaryPath)) hash.update(chunk as Buffer)
  return `${TEMPLATE_PREFIX}${hash.digest('hex').slice(0, 16)}`
}

const ready = new Map<string, Promise<string>>()

/**
 * The migrated template for this binary, made on first use. Made once per process; across
 * processes (two suites, two checkouts on one cluster) a session-held advisory lock lets one
 * creator migrate while the others wait, and the template only takes its name once migrated, so
 * a database of that name is always complete.
 */
export function authTemplate(binaryPath: string, target: PostgresTarget = postgresTarget()): Promise<string> {
  const key = `${binaryPath}\n${target.host}:${target.port}`
  let made = ready.get(key)
  if (made === undefined) {
    made = makeTemplate(binaryPath, target)
    ready.set(key, made)
    // A failure is not remembered: the next start tries again.
    made.catch(() => ready.delete(key))
  }
  return made
}

async function templateExists(target: PostgresTarget, name: string): Promise<boolean> {
  return (await runPsql(target, 'postgres', `SELECT 1 FROM pg_database WHERE datname = '${name}'`)) === '1'
}

async function makeTemplate(binaryPath: string, target: PostgresTarget): Promise<string> {
  const name = await templateName(binaryPath)
  if (await templateExists(target, name)) return name
  return withAdvisoryLock(target, name, async () => {
    if (await templateExists(target, name)) return name
    // What a creator that died before the rename left behind is dropped (no one else holds the lock).
    const building = `${name}_new`
    await prepareAuthDatabase(building, { fresh: true, target })
    await migrate(binaryPath, building, target)
    await runPsql(target, 'postgres', `ALTER DATABASE ${building} RENAME TO ${name}`)
    // A template nobody connects to can be copied at any time (a copy fails while the source has sessions).
    await runPsql(target, 'postgres', `ALTER DATABASE ${name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`)
    return name
  })
}

async function migrate(binaryPath: string, database: string, target: PostgresTarget): Promise<void> {
  const env = supabaseAuthEnv({
    port: 9,
    publicUrl: 'http://localhost/auth',
    databaseUrl: authDatabaseUrl(database, target),
    jwtSecret: generateJwtSecret(),
    signingJwk: generateSigningJwk(),
  })
  // The server reads a .env file from its working directory; an empty one keeps it from finding any.
  const workDir = await mkdtemp(join(tmpdir(), 'authgate-supabase-auth-migrate-'))
  try {
    await execFileAsync(binaryPath, ['migrate'], {
      cwd: workDir,
      env: { PATH: process.env.PATH ?? '', ...env },
      timeout: 180_000,
      maxBuffer: 16 * 1024 * 1024,
    })
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string }
    throw new Error(`Supabase Auth's migrate into ${database} failed: ${String(error)}\n${stdout}${stderr}`, {
      cause: error,
    })
  } finally {
    await rm(workDir, { recursive: true, force: true })
  }
}

/**
 * Runs `work` while a psql session holds PostgreSQL's advisory lock for `name`. The lock belongs to
 * the session, so a creator that dies mid-way releases it with its connection.
 */
async function withAdvisoryLock<T>(target: PostgresTarget, name: string, work: () => Promise<T>): Promise<T> {
  const args = ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-h', target.host, '-p', String(target.port)]
  args.push('-U', target.superuser, '-d', 'postgres')
  const session = spawn('psql', args, { stdio: ['pipe', 'pipe', 'pipe'] })
  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()))
  let output = ''
  const locked = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no advisory lock for ${name} within 300 s`)), 300_000)
    session.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8')
      if (output.includes('locked\n')) {
        clearTimeout(timer)
        resolve()
      }
    })
    session.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    session.once('error', reject)
    session.once('close', (code) => {
      clearTimeout(timer)
      reject(new Error(`psql ended (${code}) before taking the advisory lock for ${name}: ${output}`))
    })
  })
  session.stdin.write(`SELECT pg_advisory_lock(hashtext('${name}'));\n\\echo locked\n`)
  try {
    await locked
    return await work()
  } finally {
    session.stdin.end()
    await closed
  }
}
