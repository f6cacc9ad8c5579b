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
  const newTat = tat + intervalMs
  const allowAt = newTat - burst * intervalMs
  if (now < allowAt) {
    return { tat, decision: { allowed: false, remaining: 0, retryAfterMs: allowAt - now, resetMs: tat - now } }
  }
  // The epsilon absorbs float error so a whole interval elapsed counts as one unit restored.
  const remaining = Math.floor((now - allowAt) / intervalMs + 1e-9)
  return { tat: newTat, decision: { allowed: true, remaining, retryAfterMs: 0, resetMs: newTat - now } }
}
