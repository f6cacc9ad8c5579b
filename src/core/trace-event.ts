import type { FastifyRequest } from 'fastify'

/**
 * The one thing every part of authgate needs of tracing: recording a decision on the request's
 * server span. A leaf, so the limiter and the sessions can record without depending on the
 * observability floor; the span itself is attached by src/observability/tracing.ts when tracing is on.
 */
export interface SpanEvents {
  addEvent(name: string, attributes: Record<string, string | number>): unknown
}

const kSpan = Symbol('authgate.span')
type WithSpan = FastifyRequest & { [kSpan]?: SpanEvents }

/** Attaches the request's server span (tracing on only). */
export function attachSpan(request: FastifyRequest, span: SpanEvents): void {
  ;(request as WithSpan)[kSpan] = span
}

/** The request's server span, when it has one. */
export function spanOf<T extends SpanEvents>(request: FastifyRequest): T | undefined {
  return (request as WithSpan)[kSpan] as T | undefined
}

/** Records a decision on the request's server span; nothing when the request is not traced. */
export function traceEvent(request: FastifyRequest, name: string, attributes: Record<string, string | number>): void {
  ;(request as WithSpan)[kSpan]?.addEvent(name, attributes)
}

/** What the forwarder asks of tracing for each backend exchange. */
export interface BackendTracer {
  /** Starts the client span; its `traceparent` (and `tracestate`) go to the backend in place of the client's. */
  start(request: FastifyRequest, method: string, path: string): BackendSpan
}
export interface BackendSpan {
  /** `traceparent` (and `tracestate`), lower case. */
  headers: Record<string, string>
  end(status: number | undefined, error: string | undefined): void
}
