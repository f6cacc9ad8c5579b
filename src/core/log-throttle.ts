// Node.js's own, not the global: the global `performance` is a lazy getter that runs a check on
// every read, once or twice per refusal on the early 429 (docs/decisions.md, D200).
import { performance } from 'node:perf_hooks'

/**
 * Log lines that repeat (the same error for every request while the backend is down) written at
 * most once per interval and key, each carrying how many occurrences it stands for.
 */
export interface ThrottledLog {
  /** True when this occurrence should be written; `occurrences` then counts it and those skipped since. */
  take(key: string): { write: false } | { write: true; occurrences: number }
}

export interface ThrottleOptions {
  /** Most keys remembered (default 1000); the oldest is forgotten first. */
  maxKeys?: number
  /**
   * Called when an interval ends with occurrences that were not written, with their count: the
   * count is then said within one interval, not held until the next occurrence (which may never
   * come). The skipped count starts again from zero. Its timers do not keep the process alive.
   */
  onSkipped?: (key: string, skipped: number) => void
}

// The answer for an occurrence that is not written, shared: a flood of one line (a refusal per
// request) then allocates nothing per occurrence. Callers only read it.
const SKIP: { write: false } = Object.freeze({ write: false })

export function throttle(intervalMs: number, options: ThrottleOptions = {}): ThrottledLog {
  const maxKeys = options.maxKeys ?? 1000
  const onSkipped = options.onSkipped
  const last = new Map<string, { at: number; skipped: number; timer?: NodeJS.Timeout | undefined }>()

  const flush = (key: string) => {
    const entry = last.get(key)
    if (entry === undefined) return
    entry.timer = undefined
    if (entry.skipped === 0) return
    const skipped = entry.skipped
    // A new interval begins: what follows is counted towards the next summary, not written at once.
    entry.at = performance.now()
    entry.skipped = 0
    onSkipped!(key, skipped)
  }

  return {
    take(key) {
      const now = performance.now()
      const entry = last.get(key)
      if (entry !== undefined && now - entry.at < intervalMs) {
        entry.skipped++
        if (onSkipped && entry.timer === undefined)
          entry.timer = setTimeout(flush, Math.max(0, entry.at + intervalMs - now), key).unref()
        return SKIP
      }
      const occurrences = (entry?.skipped ?? 0) + 1
      if (entry?.timer !== undefined) clearTimeout(entry.timer)
      last.delete(key)
      // Bounded: the oldest key goes first (a Map iterates in insertion order).
      if (last.size >= maxKeys) {
        const oldest = last.keys().next().value!
        const timer = last.get(oldest)?.timer
        if (timer !== undefined) clearTimeout(timer)
        last.delete(oldest)
      }
      last.set(key, { at: now, skipped: 0 })
      return { write: true, occurrences }
    },
  }
}
