import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SupabaseAuthClient } from '../core/backend.ts'
import type { RateLimiter } from '../ratelimit/index.ts'

export interface ReadinessOptions {
  /** The connection to Supabase Auth (its `apikey` included: hosted Supabase answers 401 without one). */
  backend: SupabaseAuthClient
  rateLimiter?: RateLimiter | undefined
  /** Longest a probe of the backend waits. Default 2 s. */
  timeoutMs?: number
  /** A probe result is reused this long, so frequent probes cost one backend request. Default 1 s. */
  cacheMs?: number
}

export interface ReadinessReport {
  ready: boolean
  checks: { backend: 'up' | 'down'; redis?: 'up' | 'down'; shutdown?: 'draining' }
}

/**
 * Readiness of this authgate instance: false once it is shutting down (first, before the listener
 * closes), and while Supabase Auth cannot be reached (GET <backend>/health answers below 500) or
 * the rate-limit Redis, when one is configured, is not connected. Liveness is separate and never
 * looks at dependencies: a backend outage must not get authgate restarted.
 */
export class Readiness {
  readonly #health: URL
  readonly #timeoutMs: number
  readonly #options: ReadinessOptions
  #draining = false
  #cached: { at: number; up: boolean } | undefined
  #inflight: Promise<boolean> | undefined

  constructor(options: ReadinessOptions) {
    this.#options = options
    this.#timeoutMs = options.timeoutMs ?? 2000
    this.#health = options.backend.resolve('/health')
  }

  /** From now on readiness is false (shutdown). */
  drain(): void {
    this.#draining = true
  }

  get draining(): boolean {
    return this.#draining
  }

  async report(): Promise<ReadinessReport> {
    if (this.#draining) return { ready: false, checks: { backend: 'down', shutdown: 'draining' } }
    const backendUp = await this.#backendUp()
    const checks: ReadinessReport['checks'] = { backend: backendUp ? 'up' : 'down' }
    let redisUp = true
    const store = this.#options.rateLimiter?.store
    const status = store?.status?.()
    if (status !== undefined) {
      redisUp = status === 'up'
      checks.redis = redisUp ? 'up' : 'down'
    }
    return { ready: backendUp && redisUp && !this.#draining, checks }
  }

  #backendUp(): Promise<boolean> {
    const now = performance.now()
    if (this.#cached !== undefined && now - this.#cached.at < (this.#options.cacheMs ?? 1000))
      return Promise.resolve(this.#cached.up)
    this.#inflight ??= this.#probe().then((up) => {
      this.#cached = { at: performance.now(), up }
      this.#inflight = undefined
      return up
    })
    return this.#inflight
  }

  async #probe(): Promise<boolean> {
    try {
      const res = await this.#options.backend.fetch(this.#health, { signal: AbortSignal.timeout(this.#timeoutMs) })
      await res.body?.cancel()
      return res.status < 500
    } catch {
      return false
    }
  }
}

export function livenessHandler() {
  return async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store')
    return { status: 'ok' }
  }
}

export function readinessHandler(readiness: Readiness) {
  return async (_request: FastifyRequest, reply: FastifyReply) => {
    const report = await readiness.report()
    reply.code(report.ready ? 200 : 503)
    reply.header('cache-control', 'no-store')
    return { status: report.ready ? 'ready' : 'not ready', ...report.checks }
  }
}
