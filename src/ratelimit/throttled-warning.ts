import type { FastifyBaseLogger } from 'fastify'
import { throttle } from '../core/log-throttle.ts'

/**
 * A warning that is logged at most once per interval, with the number of occurrences it stands
 * for: a Redis outage under load would otherwise write one line per request.
 */
export function warnAtMostEvery(intervalMs: number, logger: Pick<FastifyBaseLogger, 'warn'>) {
  const lines = throttle(intervalMs, { maxKeys: 1 })
  return function warn(err: unknown, message: string): void {
    const taken = lines.take('')
    if (!taken.write) return
    const error = err instanceof Error ? err.message : String(err)
    logger.warn({ error, occurrences: taken.occurrences }, message)
  }
}
