// Node.js's own, not the global: the global `performance` is a lazy getter that runs a check on
// every read, once or twice per refusal on the early 429 (docs/decisions.md, D200).
import { performance } from 'node:perf_hooks'
import { gcra, gcraDenial, gcraRefund } from './gcra.ts'
import { emissionIntervalMs, type RateLimitPolicy } from './policy.ts'
import type { Decision, RateLimitStore } from './store.ts'

const SWEEP_SLICE = 5_000

export interface MemoryStoreOptions {
  /** Most buckets held at once; beyond it the least recently seen bucket is dropped. */
  maxKeys?: number
  /** How often buckets that have refilled completely are dropped. */
  sweepIntervalMs?: number
  /** Monotonic milliseconds; tests inject a fake clock. */
  now?: () => number
}

/** A client's bucket: its TAT, and whether it was used since the cap last passed it over. */
interface Bucket {
  tat: number
  seen: boolean
}

/**
 * Buckets in one process. A decision is synchronous JavaScript, so it is atomic without locks.
 * Memory stays bounded twice over: a bucket whose TAT has passed holds nothing a fresh bucket
 * would not, so the sweep drops it; and `maxKeys` caps the map even under a flood of addresses.
 */
export class MemoryStore implements RateLimitStore {
  readonly #buckets = new Map<string, Bucket>()
  readonly #maxKeys: number
  readonly #now: () => number
  readonly #timer: NodeJS.Timeout
  #sweeping = false
  #closed = false

  constructor(options: MemoryStoreOptions = {}) {
    this.#maxKeys = options.maxKeys ?? 500_000
    this.#now = options.now ?? (() => performance.now())
    this.#timer = setInterval(() => this.#sweepInSlices(), options.sweepIntervalMs ?? 10_000)
    this.#timer.unref()
  }

  get size(): number {
    return this.#buckets.size
  }

  takeSync(key: string, policy: RateLimitPolicy): Decision {
    const now = this.#now()
    const bucket = this.#buckets.get(key)
    const interval = emissionIntervalMs(policy)
    if (bucket !== undefined) {
      // A refusal changes nothing in the bucket but that it was used: the decision alone, as the
      // deny cache gives a shared store's refusal, without `gcra`'s step around it (a flood of
      // refusals from one client takes this path on every request).
      const denial = gcraDenial(bucket.tat, now, interval, policy.burst)
      if (denial !== undefined) {
        bucket.seen = true
        return denial
      }
    }
    const { tat, decision } = gcra(bucket?.tat, now, interval, policy.burst)
    // A known client is updated in place: no map write per request (moving a key to the end of a
    // Map on each use reallocates its table every few hundred uses, which a flood of refusals
    // turned into a collection of the old generation every second).
    if (bucket !== undefined) {
      bucket.tat = tat
      bucket.seen = true
    } else if (decision.allowed) {
      this.#buckets.set(key, { tat, seen: false })
      if (this.#buckets.size > this.#maxKeys) this.#dropOne()
    }
    return decision
  }

  /**
   * Drops the least recently used bucket, to within one pass (the "second chance" of a CLOCK
   * cache): the oldest bucket that was used since it was last passed over goes to the end
   * instead, so a client that keeps knocking while refused is not the first to lose its bucket.
   * Each bucket passed over was used since, so a drop costs one step on average.
   */
  #dropOne(): void {
    for (const [key, bucket] of this.#buckets) {
      this.#buckets.delete(key)
      if (!bucket.seen) return
      bucket.seen = false
      this.#buckets.set(key, bucket)
    }
  }

  take(key: string, policy: RateLimitPolicy): Promise<Decision> {
    return Promise.resolve(this.takeSync(key, policy))
  }

  refundSync(key: string, policy: RateLimitPolicy): void {
    const bucket = this.#buckets.get(key)
    if (bucket === undefined) return
    const tat = gcraRefund(bucket.tat, this.#now(), emissionIntervalMs(policy))
    if (tat === undefined) this.#buckets.delete(key)
    else bucket.tat = tat
  }

  refund(key: string, policy: RateLimitPolicy): Promise<void> {
    this.refundSync(key, policy)
    return Promise.resolve()
  }

  /** Drops every bucket that has refilled completely; returns how many. */
  sweep(): number {
    const now = this.#now()
    let dropped = 0
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tat <= now) {
        this.#buckets.delete(key)
        dropped++
      }
    }
    return dropped
  }

  /**
   * The timer's sweep: a slice of buckets per turn of the event loop, because one pass over a
   * full map (500,000 buckets) would hold up requests for tens of milliseconds. Map iterators
   * tolerate deletes and inserts while paused.
   */
  #sweepInSlices(): void {
    if (this.#sweeping) return
    this.#sweeping = true
    const entries = this.#buckets.entries()
    const slice = () => {
      if (this.#closed) return
      const now = this.#now()
      for (let n = 0; n < SWEEP_SLICE; n++) {
        const next = entries.next()
        if (next.done) {
          this.#sweeping = false
          return
        }
        if (next.value[1].tat <= now) this.#buckets.delete(next.value[0])
      }
      setImmediate(slice).unref()
    }
    slice()
  }

  close(): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    this.#buckets.clear()
    return Promise.resolve()
  }
}
