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

// undici's and Node.js's codes that mean no usable connection to an upstream (502).
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
])

/**
 * What kind of failure an exchange that ended before its answer started is, from the error's code:
 * Supabase Auth's forwarder and the services' proxy name them alike (metrics, logs).
 */
export function failureKind(code: string): 'timeout' | 'connect_timeout' | 'unreachable' | 'failed' {
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return 'timeout'
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect_timeout'
  return UNREACHABLE.has(code) ? 'unreachable' : 'failed'
}

const kBackend = Symbol('authgate.backend')
type WithBackend = FastifyRequest & { [kBackend]?: BackendExchange }

export function recordBackend(request: FastifyRequest, exchange: BackendExchange): void {
  ;(request as WithBackend)[kBackend] = exchange
}

export function backendOf(request: FastifyRequest): BackendExchange | undefined {
  return (request as WithBackend)[kBackend]
}
