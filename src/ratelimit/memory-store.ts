import { gcra } from './gcra.ts'
import { emissionIntervalMs, type RateLimitPolicy } from './policy.ts'
import type { Decision, RateLimitStore } from './store.ts'

export interface MemoryStoreOptions {
  /** Most buckets held at once; beyond it the least recently used bucket is dropped. */
  maxKeys?: number
  /** How often buckets that have refilled completely are dropped. */
  sweepIntervalMs?: number
  /** Monotonic milliseconds; tests inject a fake clock. */
  now?: () => number
}

/**
 * Buckets in one process. A decision is synchronous JavaScript, so it is atomic without locks.
 * Memory stays bounded twice over: a bucket whose TAT has passed holds nothing a fresh bucket
 * would not, so the sweep drops it; and `maxKeys` caps the map even under a flood of addresses.
 */
export class MemoryStore implements RateLimitStore {
  readonly #tats = new Map<string, number>()
  readonly #maxKeys: number
  readonly #now: () => number
  readonly #timer: NodeJS.Timeout

  constructor(options: MemoryStoreOptions = {}) {
    this.#maxKeys = options.maxKeys ?? 1_000_000
    this.#now = options.now ?? (() => performance.now())
    this.#timer = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 10_000)
    this.#timer.unref()
  }

  get size(): number {
    return this.#tats.size
  }

  takeSync(key: string, policy: RateLimitPolicy): Decision {
    const now = this.#now()
    const { tat, decision } = gcra(this.#tats.get(key), now, emissionIntervalMs(policy), policy.burst)
    if (decision.allowed) {
      // Delete then set moves the key to the end: Map order is then least recently used first.
      this.#tats.delete(key)
      this.#tats.set(key, tat)
      if (this.#tats.size > this.#maxKeys) this.#tats.delete(this.#tats.keys().next().value!)
    }
    return decision
  }

  take(key: string, policy: RateLimitPolicy): Promise<Decision> {
    return Promise.resolve(this.takeSync(key, policy))
  }

  /** Drops every bucket that has refilled completely; returns how many. */
  sweep(): number {
    const now = this.#now()
    let dropped = 0
    for (const [key, tat] of this.#tats) {
      if (tat <= now) {
        this.#tats.delete(key)
        dropped++
      }
    }
    return dropped
  }

  close(): Promise<void> {
    clearInterval(this.#timer)
    this.#tats.clear()
    return Promise.resolve()
  }
}
