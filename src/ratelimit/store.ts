import type { RateLimitPolicy } from './policy.ts'

export type StoreStatus = 'up' | 'down'

/** One rate-limit decision; every time is in milliseconds from the moment of the decision. */
export interface Decision {
  allowed: boolean
  /** Requests that could still be made right now (after this one, when allowed). */
  remaining: number
  /** Until the next request would be allowed; 0 when allowed. */
  retryAfterMs: number
  /** Until the bucket is full again (the client's state could be forgotten). */
  resetMs: number
}

/**
 * Where bucket state lives. `take` is one atomic decision that consumes a unit when allowed.
 * It rejects when the store cannot decide (Redis down or slow); the caller applies the failure policy.
 */
export interface RateLimitStore {
  take(key: string, policy: RateLimitPolicy): Promise<Decision>
  /**
   * The same decision made synchronously, offered by stores that hold their state in the process:
   * the limiter then has no promise to wait on between the decision and the answer.
   */
  takeSync?(key: string, policy: RateLimitPolicy): Decision
  /**
   * A refusal the store already knows without asking its backend (a shared store's refusals are
   * remembered locally until the time they gave); undefined when only `take` can tell.
   */
  cachedDenial?(key: string): Decision | undefined
  /**
   * Gives back one unit taken earlier from `key` (a reservation that turned out not to be spent:
   * a sign-in Supabase Auth accepted). Never more than was taken: a bucket already full stays
   * full. Rejects as `take` does when the store cannot answer; the unit then stays spent.
   */
  refund?(key: string, policy: RateLimitPolicy): Promise<void>
  /**
   * Whether the store can decide right now, for readiness and metrics; absent for stores that
   * cannot become unavailable (memory).
   */
  status?(): StoreStatus
  /** Registers a listener for changes of `status()` (a lost or regained Redis connection); returns its removal. */
  onStatusChange?(listener: (status: StoreStatus) => void): () => void
  /** Waits (at most `timeoutMs`) until the store can decide; true when it can. */
  ready?(timeoutMs: number): Promise<boolean>
  close(): Promise<void>
}
