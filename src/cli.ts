// The `authgate` command line: the service, `doctor`, `--help` and `--version` (src/main.ts runs it;
// bin/authgate.js runs `dev` itself, before any of this is read).
import cluster from 'node:cluster'
import { readFileSync } from 'node:fs'
import { adoptPrimarySecret, PrimaryStore, runPrimary, workerEnvFor } from './cluster.ts'
import { AuthgateConfigError } from './config.ts'
import { didYouMean } from './core/did-you-mean.ts'
import { readSettings } from './config/collect.ts'
import { settingsHelp } from './config/schema.ts'
import { loadServiceSettings, type ServiceSettings } from './settings.ts'
import { installShutdown } from './shutdown.ts'
import { growWithLoad } from './startup-heap.ts'

const USAGE = `Usage: authgate              (configuration from the environment)
       authgate dev          (the whole local stack: Supabase Auth, PostgreSQL, authgate, a test user;
                             from a clone of the repository: npm run dev)
       authgate doctor [--json] [--no-probe]
                             (checks authgate and Supabase Auth together; exit 1 on an error)
       authgate --help       (this text and every setting)
       authgate --version
`

const HELP = `authgate — Supabase Auth behind your own API origin

${USAGE}
Settings (environment variables; durations need a unit: 500ms, 10s, 5m, 1h):

${settingsHelp()}`

/** What the command line knows: the suggestions for a mistyped one. */
const WORDS = ['dev', 'doctor', '--help', '--version']

/** The settings from the environment; a configuration error ends the process with status 2. */
function configured(): ServiceSettings {
  try {
    return readSettings(process.env, loadServiceSettings)
  } catch (err) {
    if (err instanceof AuthgateConfigError) {
      process.stderr.write(`authgate: invalid configuration: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2)
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(HELP)
    return
  }
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
    process.stdout.write(`${pkg.version}\n`)
    return
  }
  if (args[0] === 'doctor') {
    const settings = configured()
    const { runDoctor } = await import('./doctor/run.ts')
    process.exitCode = await runDoctor(args.slice(1), { ...settings, backendEnv: process.env }, (text) =>
      process.stdout.write(text),
    )
    return
  }
  // Settings come only from the environment: anything on the command line is a mistake (a typo of
  // --help must not start a service on 0.0.0.0).
  if (args.length > 0) {
    const unknown = args.find((a) => a !== '--version' && a !== '-v') ?? args[1]!
    const near = didYouMean(unknown, WORDS)
    const hint = near === undefined ? '' : ` (did you mean ${JSON.stringify(near)}?)`
    process.stderr.write(`authgate: unknown argument ${JSON.stringify(unknown)}${hint}\n${USAGE}`)
    process.exit(2)
  }
  const settings = configured()
  const { core: config, rateLimit, openapi, workers, sessions, services, clientMetadata, consentPagePath } = settings
  if (workers > 1 && cluster.isPrimary) {
    const log = (message: string) => process.stderr.write(`authgate: ${message}\n`)
    runPrimary({
      workers,
      workerEnv: workerEnvFor(rateLimit),
      ownsRateLimitStore: !rateLimit.redis,
      memoryMaxKeys: rateLimit.memoryMaxKeys,
      stopTimeoutMs: config.shutdownDelayMs + config.shutdownTimeoutMs,
      log,
    })
    // The primary holds no app: its heap grows as V8 would have it grow from here on.
    growWithLoad()
    return
  }
  // Every worker keys accounts with the primary's secret, so that they count one account as one.
  if (cluster.isWorker) adoptPrimarySecret(rateLimit, process.env)
  // A cluster worker without Redis asks the primary, so that every worker draws on one budget.
  const rateLimitStore = cluster.isWorker && !rateLimit.redis ? new PrimaryStore() : undefined
  // Loaded here, not at the top: a cluster primary serves nothing and need not hold the app.
  const { buildApp } = await import('./app.ts')
  let app
  try {
    app = await buildApp({
      config,
      rateLimit,
      ...(rateLimitStore ? { rateLimitStore } : {}),
      openapi,
      ...(sessions ? { sessions } : {}),
      ...(clientMetadata ? { clientMetadata } : {}),
      ...(consentPagePath ? { consentPage: { path: consentPagePath } } : {}),
      ...(services ? { services } : {}),
      logger: true,
      processMetrics: true,
      clusterMetrics: cluster.isWorker,
      refuseEarly: true,
      answerUnrouted: true,
    })
  } catch (err) {
    if (err instanceof AuthgateConfigError) {
      process.stderr.write(`authgate: invalid configuration: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }

  installShutdown(app, { timeoutMs: config.shutdownTimeoutMs, delayMs: config.shutdownDelayMs })

  let address
  try {
    address = await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    // The system's refusal (port taken, no permission, a host name that does not resolve here) is
    // the operator's to fix: said in one line, without a stack trace.
    const code = (err as { code?: unknown }).code
    if (typeof code !== 'string' || !code.startsWith('E')) throw err
    process.stderr.write(
      `authgate: cannot listen on ${config.host}:${config.port} (HOST, PORT): ${(err as Error).message}\n`,
    )
    process.exit(1)
  }
  // From the first client on, the heap grows as V8 would have it grow.
  app.server.once('connection', growWithLoad)
  app.log.info({ address, backend: config.backendUrl.href, prefix: config.prefix || '/' }, 'authgate ready')
  // What `authgate doctor` finds (without its probe), as warnings where operators look; once per
  // deployment, not per worker.
  if (!cluster.isWorker || cluster.worker?.id === 1) {
    const { logStartupFindings } = await import('./doctor/run.ts')
    void logStartupFindings(
      { core: config, rateLimit, publicUrl: settings.publicUrl, workers, backendEnv: process.env },
      app.log,
    )
  }
}

main().catch((err) => {
  process.stderr.write(`authgate: ${err instanceof Error ? err.stack : String(err)}\n`)
  process.exit(1)
})
