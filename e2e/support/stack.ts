import type { FastifyInstance } from 'fastify'
import { buildApp, type AuthgateOptions } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { findFreePort, startSupabaseAuth, type SupabaseAuthServer } from './supabase-auth.ts'

export interface StackOptions {
  /** One database per test file, so files never share state even when run in parallel. */
  database: string
  /** authgate's mount prefix (default /auth). */
  prefix?: string
  trustedProxies?: string[]
  /** Supabase Auth variables that differ from supabaseAuthEnv. */
  extraEnv?: Record<string, string>
  /** Registers the test's own routes (e.g. a page served from authgate's origin) before listen. */
  beforeListen?: (app: FastifyInstance) => void | Promise<void>
  /**
   * authgate's rate limiting; off unless given, so that suites making many calls from one
   * loopback client test Supabase Auth, not the limiter (rate-limit.test.ts tests that).
   */
  rateLimit?: AuthgateOptions['rateLimit']
}

export interface Stack {
  backend: SupabaseAuthServer
  app: FastifyInstance
  port: number
  prefix: string
  /** http://127.0.0.1:<port> (no prefix). */
  url: string
  /** http://localhost:<port>: the public origin Supabase Auth is configured with (WebAuthn, issuer). */
  publicOrigin: string
  /** publicOrigin + prefix: Supabase Auth's API_EXTERNAL_URL and JWT issuer. */
  publicUrl: string
  stop(): Promise<void>
}

/** authgate on a free port in front of Supabase Auth whose public URL is that authgate. */
export async function startGateway(
  backend: SupabaseAuthServer,
  options: Omit<StackOptions, 'database' | 'extraEnv'> & { port?: number },
): Promise<{ app: FastifyInstance; port: number; url: string }> {
  const app = await buildApp({
    config: {
      backendUrl: parseBackendUrl('backend', backend.url),
      prefix: options.prefix ?? '/auth',
      trustedProxies: options.trustedProxies ?? [],
    },
    logger: false,
    rateLimit: options.rateLimit ?? false,
  })
  await options.beforeListen?.(app)
  await app.listen({ port: options.port ?? 0, host: '127.0.0.1' })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('authgate has no TCP address')
  return { app, port: address.port, url: `http://127.0.0.1:${address.port}` }
}

/**
 * Supabase Auth on a fresh database plus authgate in front of it. The gateway's port is chosen
 * first because Supabase Auth must know its public URL (links, issuer, WebAuthn origin) at start.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const prefix = options.prefix ?? '/auth'
  const port = await findFreePort()
  const publicOrigin = `http://localhost:${port}`
  const publicUrl = publicOrigin + prefix
  const backend = await startSupabaseAuth({
    publicUrl,
    database: options.database,
    ...(options.extraEnv ? { extraEnv: options.extraEnv } : {}),
  })
  let gateway
  try {
    gateway = await startGateway(backend, { ...options, prefix, port })
  } catch (error) {
    await backend.stop()
    throw error
  }
  const { app, url } = gateway
  return {
    backend,
    app,
    port,
    prefix,
    url,
    publicOrigin,
    publicUrl,
    stop: async () => {
      await app.close()
      await backend.stop()
    },
  }
}
