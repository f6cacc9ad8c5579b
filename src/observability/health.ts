import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import type { SupabaseAuthClient } from '../core/backend.ts'
import type { RateLimiter } from '../ratelimit/index.ts'
import type { RateLimitStore } from '../ratelimit/store.ts'

/** The User-Agent of readiness's own probe of Supabase Auth's `/health`. */
export const READINESS_USER_AGENT = 'authgate-readiness'

/**
 * The shared services authgate depends on, as named in the readiness body, metrics and logs: Supabase
 * Auth, Redis, and the services beside Auth by their name in the service table (`rest`, `storage`, ...).
 */
export type Dependency = 'supabase_auth' | 'redis' | (string & {})

export interface ReadinessOptions {
  /** The connection to Supabase Auth (its `apikey` included: hosted Supabase answers 401 without one). */
  backend: SupabaseAuthClient
  rateLimiter?: RateLimiter | undefined
  /**
   * Readiness also turns false while a dependency is down (the behaviour before decision D24).
   * Default false: dependencies are reported, not followed.
   */
  followDependencies?: boolean
  /** Where dependency changes are logged (up → down, down → up). */
  log?: FastifyBaseLogger | undefined
  /** Longest a probe of the backend waits. Default 2 s. */
  timeoutMs?: number
  /** A probe result is reused this long, so frequent probes cost one backend request. Default 1 s. */
  cacheMs?: number
  /**
   * Between two probes of the backend while the service runs, so a change is logged and counted
   * even when nothing asks for readiness. Default 10 s; 0 for none.
   */
  probeIntervalMs?: number
}

export interface ReadinessReport {
  ready: boolean
  checks: {
    backend: 'up' | 'down'
    redis?: 'up' | 'down'
    /** The services beside Auth (src/services/), each probed like the backend. */
    services?: Record<string, 'up' | 'down'>
    /** Present while a condition of this instance is not met (e.g. `signing_keys`). */
    waiting?: string[]
    shutdown?: 'draining'
  }
}

/** A condition this instance needs before it can serve (e.g. the first key-set fetch). */
type Condition = () => boolean | Promise<boolean>

/**
 * Readiness of this authgate instance (docs/decisions.md, D24): false once it is shutting down
 * (first, before the listener closes) and until its own conditions hold (the signing keys are
 * fetched when tokens are verified locally). Supabase Auth (GET <backend>/health below 500) and
 * the rate-limit Redis are shared by every replica: their state is in the body, the metrics and the
 * logs, and turns readiness false only with `followDependencies`. Liveness never looks at either.
 */
export class Readiness {
  readonly #health: URL
  readonly #timeoutMs: number
  readonly #options: ReadinessOptions
  readonly #conditions = new Map<string, Condition>()
  readonly #met = new Set<string>()
  readonly #state = new Map<Dependency, boolean>()
  readonly #watched = new Map<string, { probe: () => Promise<boolean>; cached?: { at: number; up: boolean } }>()
  #draining = false
  #cached: { at: number; up: boolean } | undefined
  #inflight: Promise<boolean> | undefined
  #timer: NodeJS.Timeout | undefined
  #stopRedisWatch: (() => void) | undefined

  constructor(options: ReadinessOptions) {
    this.#options = options
    this.#timeoutMs = options.timeoutMs ?? 2000
    this.#health = options.backend.resolve('/health')
    const store = options.rateLimiter?.store
    if (store?.status !== undefined) this.#watchStore(store)
  }

  get followsDependencies(): boolean {
    return this.#options.followDependencies ?? false
  }

  /**
   * Readiness stays false until `check` returns true once (checked again at each readiness
   * request until then; never again after).
   */
  require(name: string, check: Condition): void {
    this.#conditions.set(name, check)
  }

  /**
   * Another upstream reported and followed like the backend (a service beside Auth): `probe` says
   * whether it answers; its result is reused for the same time as the backend's.
   */
  watch(name: string, probe: () => Promise<boolean>): void {
    this.#watched.set(name, { probe })
  }

  async #watchedUp(name: string): Promise<boolean> {
    const entry = this.#watched.get(name)!
    const now = performance.now()
    if (entry.cached !== undefined && now - entry.cached.at < (this.#options.cacheMs ?? 1000)) return entry.cached.up
    const up = await entry.probe().catch(() => false)
    entry.cached = { at: performance.now(), up }
    this.#record(name, up)
    return up
  }

  /** Starts the periodic backend probe (the service calls it once listening). */
  start(): void {
    const every = this.#options.probeIntervalMs ?? 10_000
    if (this.#timer !== undefined || every <= 0) return
    void this.#backendUp()
    this.#timer = setInterval(() => void this.#backendUp(), every)
    this.#timer.unref()
  }

  /** From now on readiness is false (shutdown). */
  drain(): void {
    this.#draining = true
  }

  get draining(): boolean {
    return this.#draining
  }

  /** Each dependency's state: the backend probed (or its result reused), Redis's connection as it is. */
  async dependencies(): Promise<Partial<Record<Dependency, boolean>>> {
    const out: Partial<Record<Dependency, boolean>> = { supabase_auth: await this.#backendUp() }
    const redis = this.#redisUp()
    if (redis !== undefined) out.redis = redis
    const names = [...this.#watched.keys()]
    const states = await Promise.all(names.map((name) => this.#watchedUp(name)))
    names.forEach((name, i) => (out[name] = states[i]!))
    return out
  }

  async report(): Promise<ReadinessReport> {
    const deps = await this.dependencies()
    const checks: ReadinessReport['checks'] = { backend: deps.supabase_auth ? 'up' : 'down' }
    if (deps.redis !== undefined) checks.redis = deps.redis ? 'up' : 'down'
    if (this.#watched.size > 0) {
      checks.services = {}
      for (const name of this.#watched.keys()) checks.services[name] = deps[name] ? 'up' : 'down'
    }
    const waiting = await this.#unmet()
    if (waiting.length > 0) checks.waiting = waiting
    if (this.#draining) checks.shutdown = 'draining'
    const dependenciesUp =
      deps.supabase_auth! && deps.redis !== false && [...this.#watched.keys()].every((n) => deps[n])
    const ready = !this.#draining && waiting.length === 0 && (!this.followsDependencies || dependenciesUp)
    return { ready, checks }
  }

  async #unmet(): Promise<string[]> {
    const waiting: string[] = []
    for (const [name, check] of this.#conditions) {
      if (this.#met.has(name)) continue
      let ok: boolean
      try {
        ok = await check()
      } catch {
        ok = false
      }
      if (ok) this.#met.add(name)
      else waiting.push(name)
    }
    return waiting
  }

  #redisUp(): boolean | undefined {
    const status = this.#options.rateLimiter?.store.status?.()
    return status === undefined ? undefined : status === 'up'
  }

  /** A store that can become unavailable (Redis) is followed through its own status. */
  #watchStore(store: RateLimitStore): void {
    this.#stopRedisWatch = store.onStatusChange?.((status) => this.#record('redis', status === 'up'))
  }

  /** Logs a dependency's change of state: down at warn, back up at info. The first state is logged only when down. */
  #record(dependency: Dependency, up: boolean): void {
    const before = this.#state.get(dependency)
    this.#state.set(dependency, up)
    if (before === up || (before === undefined && up)) return
    if (up) this.#options.log?.info({ dependency }, 'dependency up again')
    else this.#options.log?.warn({ dependency }, 'dependency down')
  }

  #backendUp(): Promise<boolean> {
    const now = performance.now()
    if (this.#cached !== undefined && now - this.#cached.at < (this.#options.cacheMs ?? 1000))
      return Promise.resolve(this.#cached.up)
    this.#inflight ??= this.#probe().then((up) => {
      this.#cached = { at: performance.now(), up }
      this.#inflight = undefined
      this.#record('supabase_auth', up)
      return up
    })
    return this.#inflight
  }

  async #probe(): Promise<boolean> {
    try {
      // The User-Agent names the probe in the backend's logs (and lets test backends tell it from
      // forwarded traffic).
      const status = await this.#options.backend.status(
        this.#health.pathname + this.#health.search,
        READINESS_USER_AGENT,
        this.#timeoutMs,
      )
      return status < 500
    } catch {
      return false
    }
  }

  close(): Promise<void> {
    clearInterval(this.#timer)
    this.#stopRedisWatch?.()
    return Promise.resolve()
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
