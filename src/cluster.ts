import cluster, { type Worker } from 'node:cluster'
import { servePrimaryMetrics } from './observability/cluster-metrics.ts'
import { MemoryStore } from './ratelimit/memory-store.ts'
import type { RateLimitConfig } from './ratelimit/config.ts'
import type { RateLimitPolicy } from './ratelimit/policy.ts'
import { SIGNAL_REPEAT_WINDOW_MS } from './shutdown.ts'
import type { Decision, RateLimitStore } from './ratelimit/store.ts'

/**
 * AUTHGATE_WORKERS=N runs N worker processes behind one listening port (node:cluster; the primary
 * hands connections to workers in turn). One Node.js process uses about one core; this is how
 * authgate uses the others.
 *
 * Rate limits stay exact across workers. With AUTHGATE_REDIS_URL every worker already decides in
 * Redis. Without it the budget lives in the primary, which owns the one memory store and answers
 * each worker's decisions over the IPC channel: a client gets the same 30 requests whichever worker
 * its connections land on, with no extra service to run. The primary does nothing else, so it has
 * the time; decisions are batched per event-loop turn to keep the message count down.
 */

interface TakeRequest {
  id: number
  key: string
  policy: RateLimitPolicy
  /** Give a unit back instead of taking one (its answer is an allowed decision, ignored). */
  refund?: true
}
interface TakeBatch {
  authgate: 'rl-take'
  takes: TakeRequest[]
}
interface DecisionBatch {
  authgate: 'rl-decisions'
  decisions: [id: number, decision: Decision][]
}

const isTakeBatch = (m: unknown): m is TakeBatch =>
  typeof m === 'object' && m !== null && (m as { authgate?: unknown }).authgate === 'rl-take'
const isDecisionBatch = (m: unknown): m is DecisionBatch =>
  typeof m === 'object' && m !== null && (m as { authgate?: unknown }).authgate === 'rl-decisions'

/**
 * A worker's rate-limit store: every decision is made by the primary's memory store. Rejects when
 * the primary does not answer within `timeoutMs`, so the limiter's failure policy applies.
 */
export class PrimaryStore implements RateLimitStore {
  readonly #pending = new Map<number, { resolve: (d: Decision) => void; reject: (e: Error) => void }>()
  #queue: TakeRequest[] = []
  #nextId = 1
  #flushScheduled = false
  readonly #timeoutMs: number
  readonly #onMessage = (message: unknown) => {
    if (!isDecisionBatch(message)) return
    for (const [id, decision] of message.decisions) {
      const p = this.#pending.get(id)
      if (p === undefined) continue
      this.#pending.delete(id)
      p.resolve(decision)
    }
  }
  readonly #onDisconnect = () => this.#failAll(new Error('the cluster primary went away'))

  constructor(options: { timeoutMs?: number } = {}) {
    if (!process.send) throw new Error('PrimaryStore runs in a cluster worker only')
    this.#timeoutMs = options.timeoutMs ?? 1000
    process.on('message', this.#onMessage)
    process.on('disconnect', this.#onDisconnect)
  }

  take(key: string, policy: RateLimitPolicy): Promise<Decision> {
    return this.#ask({ key, policy })
  }

  refund(key: string, policy: RateLimitPolicy): Promise<void> {
    return this.#ask({ key, policy, refund: true }).then(() => undefined)
  }

  #ask(take: Omit<TakeRequest, 'id'>): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => {
      const id = this.#nextId++
      const timer = setTimeout(() => {
        if (this.#pending.delete(id)) reject(new Error('the cluster primary did not answer in time'))
      }, this.#timeoutMs)
      this.#pending.set(id, {
        resolve: (d) => {
          clearTimeout(timer)
          resolve(d)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
      this.#queue.push({ id, ...take })
      if (!this.#flushScheduled) {
        this.#flushScheduled = true
        // After this turn's I/O callbacks: every request parsed in the same turn goes in one message.
        setImmediate(this.#flush)
      }
    })
  }

  readonly #flush = () => {
    this.#flushScheduled = false
    const takes = this.#queue
    this.#queue = []
    if (takes.length === 0) return
    const message: TakeBatch = { authgate: 'rl-take', takes }
    if (!process.connected) return this.#failAll(new Error('the cluster primary went away'))
    process.send!(message)
  }

  #failAll(err: Error) {
    for (const p of this.#pending.values()) p.reject(err)
    this.#pending.clear()
  }

  close(): Promise<void> {
    process.off('message', this.#onMessage)
    process.off('disconnect', this.#onDisconnect)
    this.#failAll(new Error('store closed'))
    return Promise.resolve()
  }
}

const REFUNDED: Decision = { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 0 }

/** Answers workers' rate-limit decisions from one memory store. */
function serveDecisions(worker: Worker, store: MemoryStore) {
  worker.on('message', (message: unknown) => {
    if (!isTakeBatch(message)) return
    const decisions: DecisionBatch['decisions'] = message.takes.map((t) => {
      if (t.refund !== true) return [t.id, store.takeSync(t.key, t.policy)]
      store.refundSync(t.key, t.policy)
      return [t.id, REFUNDED]
    })
    if (worker.isConnected()) worker.send({ authgate: 'rl-decisions', decisions } satisfies DecisionBatch)
  })
}

/**
 * Where a worker finds the primary's account-key secret. Not an `AUTHGATE_*` name: it is no
 * setting, and the workers' check for unknown settings must not take it for a typo.
 */
export const WORKER_ACCOUNT_SECRET = '_AUTHGATE_ACCOUNT_KEY_SECRET_OF_PRIMARY'

/**
 * What the primary adds to each worker's environment: without AUTHGATE_ACCOUNT_KEY_SECRET every
 * process would draw a random one of its own, and the workers would key one account apart (each
 * worker's share of the per-account limit, N times the limit in all). The primary's random secret,
 * handed to all, makes them agree.
 */
export function workerEnvFor(rateLimit: Pick<RateLimitConfig, 'accounts'>): Record<string, string> {
  const accounts = rateLimit.accounts
  if (accounts === undefined || accounts.secretConfigured) return {}
  return { [WORKER_ACCOUNT_SECRET]: accounts.secret }
}

/** In a worker: takes the primary's secret in place of its own random one, and out of the environment. */
export function adoptPrimarySecret(rateLimit: Pick<RateLimitConfig, 'accounts'>, env: NodeJS.ProcessEnv): void {
  const secret = env[WORKER_ACCOUNT_SECRET]
  delete env[WORKER_ACCOUNT_SECRET]
  if (secret === undefined || rateLimit.accounts === undefined || rateLimit.accounts.secretConfigured) return
  rateLimit.accounts.secret = secret
}

export interface PrimaryOptions {
  workers: number
  /** Added to every worker's environment (workerEnvFor). */
  workerEnv?: Record<string, string>
  /** The primary owns the rate-limit store (no Redis configured). */
  ownsRateLimitStore: boolean
  memoryMaxKeys: number
  /** Longest a worker takes to stop (its shutdown delay plus timeout); the primary waits a little longer. */
  stopTimeoutMs: number
  log: (message: string) => void
}

/**
 * Runs the primary: forks the workers, owns the shared store, restarts a worker that dies after it
 * started serving, and stops everything on SIGINT/SIGTERM. A worker that dies before listening
 * (bad configuration, port in use) stops the whole service: restarting it would fail the same way.
 */
export function runPrimary(options: PrimaryOptions): void {
  const store = options.ownsRateLimitStore ? new MemoryStore({ maxKeys: options.memoryMaxKeys }) : undefined
  // Any worker's scrape answers for all of them.
  servePrimaryMetrics()
  const listening = new WeakSet<Worker>()
  let stopping = false
  let exitCode = 0

  const fork = () => {
    const worker = cluster.fork(options.workerEnv)
    if (store) serveDecisions(worker, store)
    worker.once('listening', () => listening.add(worker))
    worker.once('exit', (code, signal) => {
      if (stopping) {
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode)
        return
      }
      if (!listening.has(worker)) {
        options.log(`worker ${worker.process.pid} exited before listening (${signal ?? code}); stopping`)
        stop(1)
        return
      }
      options.log(`worker ${worker.process.pid} exited (${signal ?? code}); starting another`)
      setTimeout(fork, 500).unref()
    })
  }

  const stop = (code: number) => {
    if (stopping) return
    stopping = true
    exitCode = code
    const workers = Object.values(cluster.workers ?? {})
    if (workers.length === 0) process.exit(exitCode)
    // A worker that got the signal itself (a process-group signal) takes this copy as a repeat.
    for (const w of workers) w?.process.kill('SIGTERM')
    // The workers finish in-flight requests within their own deadline; the primary waits a little longer.
    setTimeout(() => process.exit(exitCode || 1), options.stopTimeoutMs + 5000).unref()
  }
  let firstSignalAt: number | undefined
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstSignalAt === undefined) {
      firstSignalAt = performance.now()
      stop(0)
      return
    }
    // Copies of the first signal (npm's forwarded one) are not a second request to stop.
    if (performance.now() - firstSignalAt < SIGNAL_REPEAT_WINDOW_MS) return
    options.log(`second signal (${signal}): the workers stop now`)
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM')
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  for (let i = 0; i < options.workers; i++) fork()
}
