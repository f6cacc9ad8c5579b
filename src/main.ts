#!/usr/bin/env node
import { buildApp, defaultRateLimitConfig } from './app.ts'
import { ConfigError, loadCoreConfig } from './config.ts'
import { loadOpenApiConfig } from './openapi/index.ts'

const HELP = `authgate — Supabase Auth behind your own API origin

Usage: authgate            (configuration from the environment; see README.md)
       authgate --help

Core variables: PORT (8080), HOST (0.0.0.0), AUTHGATE_BACKEND_URL (http://localhost:9999),
AUTHGATE_PREFIX (/auth), AUTHGATE_BODY_LIMIT (1mib), AUTHGATE_BACKEND_TIMEOUT (15s),
AUTHGATE_TRUSTED_PROXIES (none), AUTHGATE_LOG_LEVEL (info).
Rate limiting: AUTHGATE_RATE_LIMIT (30/5m), AUTHGATE_RATE_LIMITED_ROUTES, AUTHGATE_RATE_LIMIT_ROUTES,
AUTHGATE_REDIS_URL (memory store when unset), AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR (open).
Documentation: AUTHGATE_OPENAPI_PATH (/openapi.json), AUTHGATE_DOCS_PATH (/docs), AUTHGATE_API_TITLE,
AUTHGATE_API_VERSION.
`

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(HELP)
    return
  }
  let config, rateLimit, openapi
  try {
    config = loadCoreConfig(process.env)
    rateLimit = defaultRateLimitConfig(process.env)
    openapi = loadOpenApiConfig(process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`authgate: invalid configuration: ${err.message}\n`)
      process.exit(2)
    }
    throw err
  }
  const app = await buildApp({ config, rateLimit, openapi, logger: true })

  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down')
    // In-flight requests finish; a second signal or 10 s later the process exits anyway.
    const timer = setTimeout(() => process.exit(1), 10_000)
    timer.unref()
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.log.error({ err }, 'error while closing')
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))

  await app.listen({ port: config.port, host: config.host })
  app.log.info({ backend: config.backendUrl.href, prefix: config.prefix || '/' }, 'authgate ready')
}

main().catch((err) => {
  process.stderr.write(`authgate: ${err instanceof Error ? err.stack : String(err)}\n`)
  process.exit(1)
})
