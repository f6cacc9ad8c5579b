#!/usr/bin/env node
import cluster from 'node:cluster'
import { PrimaryStore, runPrimary, workerCount } from './cluster.ts'
import { defaultRateLimitConfig } from './plugin.ts'
import { ConfigError, loadCoreConfig } from './config.ts'
import { loadOpenApiConfig } from './openapi/index.ts'
import { settingsHelp } from './config/schema.ts'
import { installShutdown } from './shutdown.ts'

const HELP = `authgate — Supabase Auth behind your own API origin

Usage: authgate            (configuration from the environment)
       authgate --help

Settings (environment variables; durations need a unit: 500ms, 10s, 5m, 1h):

${settingsHelp()}`

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(HELP)
    return
  }
  let config, rateLimit, openapi, workers
  try {
    config = loadCoreConfig(process.env)
    rateLimit = defaultRateLimitConfig(process.env)
    openapi = loadOpenApiConfig(process.env)
    workers = workerCount(process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`authgate: invalid configuration: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
  if (workers > 1 && cluster.isPrimary) {
    const log = (message: string) => process.stderr.write(`authgate: ${message}\n`)
    runPrimary({
      workers,
      ownsRateLimitStore: !rateLimit.redis,
      memoryMaxKeys: rateLimit.memoryMaxKeys,
      stopTimeoutMs: config.shutdownDelayMs + config.shutdownTimeoutMs,
      log,
    })
    return
  }
  // A cluster worker without Redis asks the primary, so that every worker draws on one budget.
  if (cluster.isWorker && !rateLimit.redis) rateLimit = { ...rateLimit, store: new PrimaryStore() }
  // Loaded here, not at the top: a cluster primary serves nothing and need not hold the app.
  const { buildApp } = await import('./app.ts')
  let app
  try {
    app = await buildApp({
      config,
      rateLimit,
      openapi,
      logger: true,
      processMetrics: true,
      clusterMetrics: cluster.isWorker,
    })
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`authgate: invalid configuration: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }

  installShutdown(app, { timeoutMs: config.shutdownTimeoutMs, delayMs: config.shutdownDelayMs })

  const address = await app.listen({ port: config.port, host: config.host })
  app.log.info({ address, backend: config.backendUrl.href, prefix: config.prefix || '/' }, 'authgate ready')
}

main().catch((err) => {
  process.stderr.write(`authgate: ${err instanceof Error ? err.stack : String(err)}\n`)
  process.exit(1)
})
