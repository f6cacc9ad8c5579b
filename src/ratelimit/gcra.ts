import type { Decision } from './store.ts'

export interface GcraStep {
  decision: Decision
  /** The theoretical arrival time to store (unchanged when denied). */
  tat: number
}

/**
 * Generic Cell Rate Algorithm (ITU-T I.371; as in redis-cell / throttled). State is one number,
 * the theoretical arrival time (TAT) of the next request at the sustained rate. A request at
 * `now` is allowed when it is no more than `burst` emission intervals early; it then pushes TAT
 * one interval on. Denied requests change nothing, so hammering does not extend the wait.
 * The Redis store's Lua script is this same function in microseconds (redis-script.ts).
 */
export function gcra(storedTat: number | undefined, now: number, intervalMs: number, burst: number): GcraStep {
  const tat = storedTat === undefined || storedTat < now ? now : storedTat
  const denial = gcraDenial(storedTat, now, intervalMs, burst)
  if (denial !== undefined) return { tat, decision: denial }
  const ahead = tat - now
  const maxAhead = (burst - 1) * intervalMs
  const remaining = Math.max(0, Math.floor((maxAhead - ahead) / intervalMs + 1e-9))
  return { tat: tat + intervalMs, decision: { allowed: true, remaining, retryAfterMs: 0, resetMs: ahead + intervalMs } }
}

/** How early (ms) a request may come against its theoretical arrival time and still be allowed. */
export const TOLERANCE_MS = 0.001

/**
 * `gcra`'s refusal alone: the decision when the request is refused, undefined when it would be
 * allowed. A refusal leaves the TAT as it was (it is in the future), so a store that holds it
 * needs only this on the path a flood of refusals takes, not a step object around the decision.
 */
export function gcraDenial(
  storedTat: number | undefined,
  now: number,
  intervalMs: number,
  burst: number,
): Decision | undefined {
  const tat = storedTat === undefined || storedTat < now ? now : storedTat
  // Differences, not absolute times: (now + T) - T is not `now` in floating point, and a 1/1h
  // policy would then refuse its very first request. The tolerance is one microsecond.
  const ahead = tat - now
  const maxAhead = (burst - 1) * intervalMs
  if (ahead > maxAhead + TOLERANCE_MS)
    return { allowed: false, remaining: 0, retryAfterMs: ahead - maxAhead, resetMs: ahead }
  return undefined
}

/**
 * The TAT after one unit is given back: one interval earlier, and undefined once that is in the
 * past (the bucket is full, and its state can go). A bucket already full has nothing to give back.
 */
export function gcraRefund(storedTat: number | undefined, now: number, intervalMs: number): number | undefined {
  if (storedTat === undefined) return undefined
  const tat = storedTat - intervalMs
  return tat > now ? tat : undefined
}
