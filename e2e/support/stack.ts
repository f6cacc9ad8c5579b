import type { FastifyInstance } from 'fastify'
import { buildApp, type AuthgateOptions } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { assertDocumented, recordAnswers, type Observed } from './document-check.ts'
import { startSupabaseAuth, withFreePort, type SupabaseAuthServer } from './supabase-auth.ts'

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
  /** Browser origins authgate answers CORS for (AUTHGATE_CORS_ORIGINS). */
  corsOrigins?: string[]
  /** Names the gateway in the document check's report. */
  label?: string
  /** Cookie sessions (docs/sessions.md); off unless given. */
  sessions?: AuthgateOptions['sessions']
  /** Token verification on the application's routes (docs/protect.md). */
  protect?: AuthgateOptions['protect']
  /** The Supabase services beside Auth (docs/services.md), given Supabase Auth once it runs (its JWT keys). */
  services?: (backend: SupabaseAuthServer) => AuthgateOptions['services']
  /** Client ID metadata documents (docs/mcp.md); off unless given. */
  clientMetadata?: AuthgateOptions['clientMetadata']
  /** authgate's own OAuth consent page (docs/mcp.md); off unless given. */
  consentPage?: AuthgateOptions['consentPage']
}

export interface Gateway {
  app: FastifyInstance
  port: number
  url: string
  /** Every answer the gateway gave so far (e2e/support/document-check.ts). */
  observed: Observed[]
  /** Closes the gateway, then fails if any answer it gave is not described by its document. */
  close(): Promise<void>
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
  /** Every answer the gateway gave so far. */
  observed: Observed[]
  /** Stops both; fails when an answer the gateway gave is not described by its document. */
  stop(): Promise<void>
}

/** authgate on a free port in front of Supabase Auth whose public URL is that authgate. */
export async function startGateway(
  backend: SupabaseAuthServer,
  options: Omit<StackOptions, 'database' | 'extraEnv'> & { port?: number },
): Promise<Gateway> {
  const app = await buildApp({
    config: {
      backendUrl: parseBackendUrl('backend', backend.url),
      prefix: options.prefix ?? '/auth',
      trustedProxies: options.trustedProxies ?? [],
      corsOrigins: options.corsOrigins ?? [],
    },
    logger: false,
    rateLimit: options.rateLimit ?? false,
    ...(options.sessions ? { sessions: options.sessions } : {}),
    ...(options.protect ? { protect: options.protect } : {}),
    ...(options.services ? { services: options.services(backend) } : {}),
    ...(options.clientMetadata ? { clientMetadata: options.clientMetadata } : {}),
    ...(options.consentPage ? { consentPage: options.consentPage } : {}),
  })
  await options.beforeListen?.(app)
  const observed = recordAnswers(app)
  try {
    await app.listen({ port: options.port ?? 0, host: '127.0.0.1' })
  } catch (error) {
    // A port lost to a race (startStack tries another): nothing of this instance may stay open.
    await app.close()
    throw error
  }
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('authgate has no TCP address')
  const label = options.label ?? `authgate at ${options.prefix ?? '/auth'}`
  return {
    app,
    port: address.port,
    url: `http://127.0.0.1:${address.port}`,
    observed,
    close: async () => {
      // The document is read before closing; every answer given is then judged against it.
      const doc = await app.inject({ method: 'GET', url: '/openapi.json' })
      await app.close()
      await assertDocumented(doc, observed, label)
    },
  }
}

/**
 * Supabase Auth on a fresh database plus authgate in front of it. The gateway's port is chosen
 * first because Supabase Auth must know its public URL (links, issuer, WebAuthn origin) at start.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const prefix = options.prefix ?? '/auth'
  // The gateway's port stays reserved while Supabase Auth starts; should it still be lost, both
  // start again on another port.
  const { port, backend, gateway } = await withFreePort(async (reservation) => {
    const port = reservation.port
    const backend = await startSupabaseAuth({
      publicUrl: `http://localhost:${port}${prefix}`,
      database: options.database,
      ...(options.extraEnv ? { extraEnv: options.extraEnv } : {}),
    })
    try {
      await reservation.release()
      return { port, backend, gateway: await startGateway(backend, { ...options, prefix, port }) }
    } catch (error) {
      await backend.stop()
      throw error
    }
  })
  const publicOrigin = `http://localhost:${port}`
  const { app, url, observed } = gateway
  return {
    backend,
    app,
    port,
    prefix,
    url,
    publicOrigin,
    publicUrl: publicOrigin + prefix,
    observed,
    stop: async () => {
      try {
        await gateway.close()
      } finally {
        await backend.stop()
      }
    },
  }
}
