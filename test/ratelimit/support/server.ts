/**
 * A stand-alone process serving the tiny app with the limiter configured from the environment,
 * like one authgate replica. Prints `{"port": n}` on stdout once listening.
 * TEST_TRUST_PROXY: CIDR list handed to Fastify's trustProxy.
 */
import { loadRateLimitConfig } from '../../../src/ratelimit/config.ts'
import { createRateLimiter } from '../../../src/ratelimit/limiter.ts'
import { ROUTES, tinyApp } from './app.ts'

const config = loadRateLimitConfig(process.env, ROUTES)
const limiter = createRateLimiter(config, { warn: (...a: unknown[]) => console.error(...a), info: () => {} })
const trust = process.env.TEST_TRUST_PROXY
const { app } = tinyApp(limiter, trust ? { trustProxy: trust.split(',') } : {})
await limiter.ready()
await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
process.stdout.write(JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 }) + '\n')
process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => limiter.close())
    .then(() => process.exit(0))
})
