/**
 * Log lines that repeat (the same error for every request while the backend is down) written at
 * most once per interval and key, each carrying how many occurrences it stands for.
 */
export interface ThrottledLog {
  /** True when this occurrence should be written; `occurrences` then counts it and those skipped since. */
  take(key: string): { write: false } | { write: true; occurrences: number }
}

export function throttle(intervalMs: number, maxKeys = 1000): ThrottledLog {
  const last = new Map<string, { at: number; skipped: number }>()
  return {
    take(key) {
      const now = performance.now()
      const entry = last.get(key)
      if (entry !== undefined && now - entry.at < intervalMs) {
        entry.skipped++
        return { write: false }
      }
      const occurrences = (entry?.skipped ?? 0) + 1
      last.delete(key)
      // Bounded: the oldest key goes first (a Map iterates in insertion order).
      if (last.size >= maxKeys) last.delete(last.keys().next().value!)
      last.set(key, { at: now, skipped: 0 })
      return { write: true, occurrences }
    },
  }
}
