// Node.js's own, not the global: the global `performance` is a lazy getter that runs a check on
// every read, once or twice per refusal on the early 429 (docs/decisions.md, D200).
import { performance } from 'node:perf_hooks'
import type { Decision } from './store.ts'

interface Denial {
  /** Monotonic time until which the shared store will refuse this key. */
  until: number
  /** Monotonic time at which the bucket is full again. */
  resetAt: number
}

/**
 * Refusals of a shared store, remembered in this process until the time the store gave. A GCRA
 * refusal changes nothing in the bucket and says exactly when the next request can be allowed, so
 * every request for that key before then would be refused by the store too: answering those here
 * saves the round trip without allowing anything the store would refuse (this cache only ever
 * refuses). The time is counted from when the question was sent, not from when the answer came,
 * so the local deadline is never later than the store's. Memory is bounded: past `maxKeys` the
 * oldest refusal is forgotten, which costs only a round trip.
 */
export class DenyCache {
  readonly #denials = new Map<string, Denial>()
  readonly #maxKeys: number
  readonly #now: () => number

  constructor(options: { maxKeys?: number; now?: () => number } = {}) {
    this.#maxKeys = options.maxKeys ?? 100_000
    this.#now = options.now ?? (() => performance.now())
  }

  /** The monotonic time to pass to `remember` for a question sent now. */
  now(): number {
    return this.#now()
  }

  /** A refusal still in force for `key`, as the store would give it now; undefined otherwise. */
  get(key: string): Decision | undefined {
    const denial = this.#denials.get(key)
    if (denial === undefined) return undefined
    const now = this.#now()
    if (now >= denial.until) {
      this.#denials.delete(key)
      return undefined
    }
    return {
      allowed: false,
      remaining: 0,
      retryAfterMs: denial.until - now,
      resetMs: Math.max(0, denial.resetAt - now),
    }
  }

  /** Records the store's decision about a question sent at `askedAt` (a refusal is kept). */
  remember(key: string, decision: Decision, askedAt: number): void {
    if (decision.allowed || decision.retryAfterMs <= 0) return
    // Re-inserted at the end: the map's order is then the order of the latest refusals.
    this.#denials.delete(key)
    this.#denials.set(key, { until: askedAt + decision.retryAfterMs, resetAt: askedAt + decision.resetMs })
    if (this.#denials.size > this.#maxKeys) {
      const oldest = this.#denials.keys().next().value
      if (oldest !== undefined) this.#denials.delete(oldest)
    }
  }

  /** Forgets a key whose bucket was given units back: the store may allow it sooner now. */
  forget(key: string): void {
    this.#denials.delete(key)
  }

  get size(): number {
    return this.#denials.size
  }
}
