import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateJwtSecret, generateSigningJwk, signServiceRoleJwt } from '../../scripts/supabase-auth/jwt.ts'
import type { SigningJwk } from '../../scripts/supabase-auth/jwt.ts'
import { authTemplate } from './auth-template.ts'
import {
  authDatabaseUrl,
  dropDatabase,
  postgresUnavailableReason,
  prepareAuthDatabase,
} from '../../scripts/supabase-auth/postgres.ts'
import { findSupabaseAuthBinary } from '../../scripts/supabase-auth/binary.ts'
import { reservePort, type PortReservation } from '../../scripts/supabase-auth/port.ts'
import { supabaseAuthEnv } from '../../scripts/supabase-auth/env.ts'

export { signServiceRoleJwt } from '../../scripts/supabase-auth/jwt.ts'

/** Database used when none is given; AUTHGATE_E2E_DATABASE overrides it. */
export const DEFAULT_DATABASE = 'authgate_e2e'

export interface StartSupabaseAuthOptions {
  /** authgate's public base URL, prefix included, e.g. http://localhost:8080/auth. */
  publicUrl: string
  /** Listening port on 127.0.0.1; a free one is picked when absent. */
  port?: number
  siteUrl?: string
  database?: string
  /** Drop and recreate the database first (default true) so every run starts clean. */
  freshDatabase?: boolean
  /** Applied last: overrides any variable of supabaseAuthEnv. */
  extraEnv?: Record<string, string>
  /** How long to wait for migrations and GET /health (default 60 s). */
  startupTimeoutMs?: number
}

export interface SupabaseAuthServer {
  /** Where the server itself listens, e.g. http://127.0.0.1:41234 (no prefix). */
  url: string
  port: number
  database: string
  jwtSecret: string
  signingJwk: SigningJwk
  env: Readonly<Record<string, string>>
  /** A fresh HS256 service-role token for the admin API. */
  serviceRoleJwt(): string
  stop(): Promise<void>
  /** Everything the process printed so far. */
  logs(): string
}

/** Why the real backend cannot be started here, or undefined when it can. */
export async function backendUnavailableReason(): Promise<string | undefined> {
  const binary = await findSupabaseAuthBinary()
  if ('reason' in binary) return binary.reason
  return postgresUnavailableReason()
}

/** True for the error of a listen on a port that something else took in the meantime. */
export function isAddressInUse(error: unknown): boolean {
  return (
    (error as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE' ||
    (error instanceof Error && /address already in use/.test(error.message))
  )
}

/** Tries `start` with a fresh port up to three times while the port is lost to a race (EADDRINUSE). */
export async function withFreePort<T>(start: (port: PortReservation) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await reservePort()
    try {
      return await start(port)
    } catch (error) {
      if (attempt >= 3 || !isAddressInUse(error)) throw error
    } finally {
      await port.release()
    }
  }
}

const MAX_LOG_CHARS = 1_000_000

function collectOutput(child: ChildProcess): () => string {
  let text = ''
  const append = (chunk: Buffer): void => {
    text += chunk.toString('utf8')
    if (text.length > MAX_LOG_CHARS) text = text.slice(-MAX_LOG_CHARS)
  }
  child.stdout?.on('data', append)
  child.stderr?.on('data', append)
  return () => text
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // already gone
  }
}

async function waitForHealth(url: string, child: ChildProcess, timeoutMs: number, logs: () => string) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`Supabase Auth exited (${child.exitCode ?? child.signalCode}) during start:\n${logs()}`)
    }
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) })
      await response.body?.cancel()
      if (response.status === 200) return
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  throw new Error(`Supabase Auth did not answer GET /health within ${timeoutMs} ms:\n${logs()}`)
}

/** Environment the child gets besides its own settings: nothing else, so no stray GOTRUE_* leaks in. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of ['PATH', 'HOME', 'TZ', 'LANG']) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return env
}

/**
 * Prepares the database (a copy of the binary's migrated template), runs the server with no
 * sub-command (it migrates, finding nothing left to do, then serves) and resolves once GET /health
 * answers 200.
 */
export async function startSupabaseAuth(options: StartSupabaseAuthOptions): Promise<SupabaseAuthServer> {
  if (options.port !== undefined) return startSupabaseAuthOn(options, options.port, async () => undefined)
  return withFreePort((reservation) => startSupabaseAuthOn(options, reservation.port, reservation.release))
}

async function startSupabaseAuthOn(
  options: StartSupabaseAuthOptions,
  port: number,
  releasePort: () => Promise<void>,
): Promise<SupabaseAuthServer> {
  const binary = await findSupabaseAuthBinary()
  if ('reason' in binary) throw new Error(binary.reason)

  // The process id keeps two suites running at once on one machine (two checkouts, CI beside a
  // developer) from dropping each other's database; the database is dropped again on stop.
  const database = `${options.database ?? process.env.AUTHGATE_E2E_DATABASE ?? DEFAULT_DATABASE}_${process.pid}`
  // A copy of the database this binary's migrations made once: the server finds nothing to migrate.
  const template = await authTemplate(binary.path)
  await prepareAuthDatabase(database, { fresh: options.freshDatabase ?? true, template })

  const jwtSecret = generateJwtSecret()
  const signingJwk = generateSigningJwk()
  const env = {
    ...supabaseAuthEnv({
      port,
      publicUrl: options.publicUrl,
      siteUrl: options.siteUrl,
      databaseUrl: authDatabaseUrl(database),
      jwtSecret,
      signingJwk,
    }),
    ...options.extraEnv,
  }

  // The server reads a .env file from its working directory; an empty one keeps it from finding any.
  const workDir = await mkdtemp(join(tmpdir(), 'authgate-supabase-auth-'))
  await releasePort()
  const child = spawn(binary.path, [], {
    cwd: workDir,
    env: { ...baseEnv(), ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const logs = collectOutput(child)
  // A test runner that dies mid-test must not leave the server holding the port and database.
  const killOnExit = (): void => killGroup(child, 'SIGKILL')
  process.once('exit', killOnExit)
  const spawnError = new Promise<never>((_, reject) => child.once('error', reject))
  spawnError.catch(() => undefined)

  const url = `http://127.0.0.1:${port}`
  let stopped: Promise<void> | undefined
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      process.removeListener('exit', killOnExit)
      killGroup(child, 'SIGTERM')
      const gracePeriod = sleep(5_000, false, { ref: false })
      const graceful = await Promise.race([exited(child).then(() => true), gracePeriod])
      if (!graceful) {
        killGroup(child, 'SIGKILL')
        await exited(child)
      }
      await rm(workDir, { recursive: true, force: true })
      await dropDatabase(database).catch(() => undefined)
    })()
    return stopped
  }

  try {
    await Promise.race([waitForHealth(url, child, options.startupTimeoutMs ?? 60_000, logs), spawnError])
  } catch (error) {
    await stop()
    throw error
  }

  return {
    url,
    port,
    database,
    jwtSecret,
    signingJwk,
    env,
    serviceRoleJwt: () => signServiceRoleJwt(jwtSecret),
    stop,
    logs,
  }
}
