import type { FastifyBaseLogger } from 'fastify'

/**
 * A warning that is logged at most once per interval, with the number of occurrences it stands
 * for: a Redis outage under load would otherwise write one line per request.
 */
export function warnAtMostEvery(intervalMs: number, logger: Pick<FastifyBaseLogger, 'warn'>) {
  let last = -Infinity
  let suppressed = 0
  return function warn(err: unknown, message: string): void {
    const now = performance.now()
    if (now - last < intervalMs) {
      suppressed++
      return
    }
    last = now
    const error = err instanceof Error ? err.message : String(err)
    logger.warn({ error, occurrences: suppressed + 1 }, message)
    suppressed = 0
  }
}
