import type { FastifyRequest } from 'fastify'

/** What the forwarder records about one backend exchange, for the request log line and the metrics. */
export interface BackendExchange {
  /** From dispatch to the response head (or the error). */
  durationMs: number
  status?: number
  /** `unreachable`, `timeout`, `connect_timeout`, `relay` (the body broke off), `bad_header`, `failed`. */
  error?: BackendErrorKind
}

export type BackendErrorKind = 'unreachable' | 'connect_timeout' | 'timeout' | 'relay' | 'bad_header' | 'failed'

const kBackend = Symbol('authgate.backend')
type WithBackend = FastifyRequest & { [kBackend]?: BackendExchange }

export function recordBackend(request: FastifyRequest, exchange: BackendExchange): void {
  ;(request as WithBackend)[kBackend] = exchange
}

export function backendOf(request: FastifyRequest): BackendExchange | undefined {
  return (request as WithBackend)[kBackend]
}
