import type { IncomingMessage } from 'node:http'
import type { RateLimitPolicy } from './policy.ts'
import type { Decision, RateLimitStore } from './store.ts'
import { kStoreFailed } from '../core/raw-request.ts'

/**
 * What one limit says of one request, whoever renders it (the route's hook, the body hook of the
 * per-account limits and budgets, the early refusal): allowed, refused, or undecided because the
 * store could not answer, in which case the failure policy has already said whether the request
 * goes on (`open`) or is refused (`closed`).
 */
export type Verdict =
  { kind: 'allow'; decision: Decision } | { kind: 'deny'; decision: Decision } | { kind: 'unavailable'; open: boolean }

export interface DecisionCounters {
  allowed: number
  storeErrors: number
  failedOpen: number
  failedClosed: number
}

export interface Decider {
  /** The decision for `key` under `policy`; never rejects (a store failure is a verdict). */
  decide(raw: IncomingMessage, key: string, policy: RateLimitPolicy): Promise<Verdict>
  /** The same, synchronously, for a store that decides in the process; undefined for one that cannot. */
  readonly decideSync: ((key: string, policy: RateLimitPolicy) => Verdict) | undefined
  /**
   * What can be said before any I/O: the synchronous decision (an allowed one counted), or a
   * refusal a shared store remembers; undefined when only a round trip can tell. The decision
   * itself, not a verdict around it: the early refusal reads it on every request of a flood.
   */
  decideNow(key: string, policy: RateLimitPolicy): Decision | undefined
  /** True when the store failed for this request: its later limits follow the failure policy at once. */
  failedFor(raw: IncomingMessage): boolean
}

// Set on a request once the store failed to decide for it: its later decisions (the per-account
// limit, the budgets) follow the failure policy at once, so a stalled Redis costs a request one
// AUTHGATE_REDIS_TIMEOUT, not one per limit.
type WithStoreFailure = IncomingMessage & { [kStoreFailed]?: true }

/**
 * The one place a rate-limit decision is made: the store asked, its failure counted and logged
 * once per request, and the failure policy (AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR) applied. Counts
 * the requests allowed and the store's failures; denials are counted by the renderer, which
 * knows which limit and route refused.
 */
export function createDecider(
  store: RateLimitStore,
  failurePolicy: 'open' | 'closed',
  counters: DecisionCounters,
  onStoreError: (err: unknown) => void,
): Decider {
  const open = failurePolicy === 'open'
  const failure = (): Verdict => {
    if (open) counters.failedOpen++
    else counters.failedClosed++
    return { kind: 'unavailable', open }
  }
  const verdict = (decision: Decision): Verdict => {
    if (!decision.allowed) return { kind: 'deny', decision }
    counters.allowed++
    return { kind: 'allow', decision }
  }
  const takeSync = store.takeSync?.bind(store)
  const cachedDenial = store.cachedDenial?.bind(store)
  const decideSync = takeSync ? (key: string, policy: RateLimitPolicy) => verdict(takeSync(key, policy)) : undefined
  return {
    async decide(raw, key, policy) {
      const request = raw as WithStoreFailure
      // Not asked again once it failed for this request (counted and logged then).
      if (request[kStoreFailed] === true) return failure()
      try {
        return verdict(takeSync ? takeSync(key, policy) : await store.take(key, policy))
      } catch (err) {
        counters.storeErrors++
        onStoreError(err)
        request[kStoreFailed] = true
        return failure()
      }
    },
    decideSync,
    decideNow(key, policy) {
      if (takeSync === undefined) return cachedDenial?.(key)
      const decision = takeSync(key, policy)
      if (decision.allowed) counters.allowed++
      return decision
    },
    failedFor: (raw) => (raw as WithStoreFailure)[kStoreFailed] === true,
  }
}
