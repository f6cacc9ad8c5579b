import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { SocketStats } from './websocket.ts'

/** Seconds: a Realtime socket lives from a page view (seconds) to a dashboard left open (a day). */
const SOCKET_BUCKETS = [1, 10, 60, 300, 900, 3600, 4 * 3600, 24 * 3600]

/**
 * The relayed WebSockets in the service's metrics, by service label: open now, opened in all, and
 * how long each lived. The HTTP services' requests are in `authgate_http_requests_total` already,
 * under their route (`/rest/v1/*`).
 */
export function registerSocketMetrics(registry: Registry, stats: SocketStats, services: readonly string[]): void {
  const open = new Gauge({
    name: 'authgate_websocket_connections',
    help: 'WebSocket connections relayed now, by service',
    labelNames: ['service'] as const,
    registers: [registry],
    collect() {
      for (const [service, count] of stats.open) this.set({ service }, count)
    },
  })
  const seen = new Map<string, number>()
  const opened = new Counter({
    name: 'authgate_websocket_connections_total',
    help: 'WebSocket connections relayed since start, by service',
    labelNames: ['service'] as const,
    registers: [registry],
    collect() {
      for (const [service, count] of stats.opened) {
        this.inc({ service }, count - (seen.get(service) ?? 0))
        seen.set(service, count)
      }
    },
  })
  const duration = new Histogram({
    name: 'authgate_websocket_connection_duration_seconds',
    help: 'How long each relayed WebSocket connection was open, by service',
    labelNames: ['service'] as const,
    buckets: SOCKET_BUCKETS,
    registers: [registry],
  })
  for (const service of services) {
    open.set({ service }, 0)
    opened.inc({ service }, 0)
    duration.zero({ service })
  }
  stats.onClosed = (service, seconds) => duration.observe({ service }, seconds)
}
