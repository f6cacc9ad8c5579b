import type { FastifyInstance } from 'fastify'
import { throttle } from '../core/log-throttle.ts'

/** How many connections the limit has closed so far (the metrics read it). */
export interface ConnectionLimit {
  readonly dropped: number
}

/**
 * AUTHGATE_MAX_CONNECTIONS as Node.js's `server.maxConnections`: beyond it a new connection is
 * accepted and closed at once, so idle or slow clients (each bounded in time by the header, request
 * and keep-alive timeouts, but not in number) cannot take every file descriptor, and the backend and
 * Redis connections that every request needs keep theirs. Connections already open are served as
 * before. A drop is logged once per 10 s with the count in between.
 */
export function limitConnections(app: FastifyInstance, max: number): ConnectionLimit {
  const state = { dropped: 0 }
  if (max === 0) return state
  app.server.maxConnections = max
  const lines = throttle(10_000, {
    maxKeys: 1,
    onSkipped: (_key, skipped) =>
      app.log.warn({ maxConnections: max, occurrences: skipped, repeated: true }, 'connection limit reached'),
  })
  app.server.on('drop', (data?: { remoteAddress?: string }) => {
    state.dropped++
    const taken = lines.take('')
    if (taken.write)
      app.log.warn(
        { maxConnections: max, ip: data?.remoteAddress, occurrences: taken.occurrences },
        'connection limit reached: new connections are closed until some end (AUTHGATE_MAX_CONNECTIONS)',
      )
  })
  return state
}
