import type { Context, Span, Tracer } from '@opentelemetry/api'
import type { SpanExporter } from '@opentelemetry/sdk-trace'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { attachSpan, spanOf, type BackendTracer } from '../core/trace-event.ts'
import { peerIsTrusted, trustedPeers } from './request-id.ts'
import { clientIp } from '../proxy/client-ip.ts'
import { routeUrl } from './route-url.ts'

/**
 * OpenTelemetry traces, off unless AUTHGATE_TRACING=otlp: a server span per request that reaches
 * Fastify, a client span per backend exchange, and the decisions taken on the way (rate limits,
 * sessions) as events of the server span. The OpenTelemetry packages are loaded only when tracing
 * is on, so a service without it pays nothing, not even their memory.
 *
 * Spans are passed explicitly (on the request), not through an async context manager: authgate
 * knows which request every span belongs to, and a context manager would cost every request its
 * async hooks whether traced or not.
 */

export interface TracingOptions {
  /** Where spans go; by default OTLP/HTTP configured by the standard OTEL_EXPORTER_OTLP_* variables. */
  exporter?: SpanExporter
  /** Addresses whose `traceparent` is continued; anyone else's starts a new trace. */
  trustedProxies: readonly string[]
  /** The backend's host, for the client spans' `server.address`. */
  backendHost: string
}

type Getter = {
  keys: (c: FastifyRequest['headers']) => string[]
  get: (c: FastifyRequest['headers'], k: string) => string | string[] | undefined
}
const headerGetter: Getter = { keys: (carrier) => Object.keys(carrier), get: (carrier, key) => carrier[key] }

/**
 * Installs tracing on the service: hooks for the server spans, and the tracer the forwarder calls
 * for client spans. Spans are flushed when the service closes.
 */
export async function installTracing(app: FastifyInstance, options: TracingOptions): Promise<BackendTracer> {
  const api = await import('@opentelemetry/api')
  const { TracerProvider, BatchSpanProcessor, SimpleSpanProcessor } = await import('@opentelemetry/sdk-trace')
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core')
  const { resourceFromAttributes } = await import('@opentelemetry/resources')
  const exporter = options.exporter ?? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter()
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME || 'authgate' }),
    // A given exporter is a test's or an embedding application's: spans reach it as they end.
    spanProcessors: [options.exporter ? new SimpleSpanProcessor({ exporter }) : new BatchSpanProcessor({ exporter })],
  })
  const tracer: Tracer = provider.getTracer('authgate')
  const propagator = new W3CTraceContextPropagator()
  const peers = trustedPeers(options.trustedProxies)
  const anyTrusted = options.trustedProxies.length > 0
  const trusted = (address: string | undefined): boolean => anyTrusted && peerIsTrusted(peers, address)

  app.addHook('onRequest', (request, _reply, done) => {
    // A client's own traceparent would let it choose the trace its requests land in: continued only
    // from a trusted proxy, as the request id is.
    const parent: Context = trusted(request.raw.socket?.remoteAddress)
      ? propagator.extract(api.ROOT_CONTEXT, request.headers, headerGetter)
      : api.ROOT_CONTEXT
    const route = routeUrl(request)
    const span = tracer.startSpan(
      route === undefined ? request.method : `${request.method} ${route}`,
      {
        kind: api.SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          ...(route === undefined ? {} : { 'http.route': route }),
          'authgate.request_id': request.id,
          'client.address': clientIp(request),
        },
      },
      parent,
    )
    attachSpan(request, span)
    done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    const span = spanOf<Span>(request)
    if (span !== undefined) {
      span.setAttribute('http.response.status_code', reply.statusCode)
      if (reply.statusCode >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR })
      span.end()
    }
    done()
  })
  app.addHook('onClose', async () => {
    await provider.shutdown()
  })

  return {
    start(request, method, path) {
      const server = spanOf<Span>(request)
      const context = server === undefined ? api.ROOT_CONTEXT : api.trace.setSpan(api.ROOT_CONTEXT, server)
      const span = tracer.startSpan(
        method,
        {
          kind: api.SpanKind.CLIENT,
          attributes: { 'http.request.method': method, 'server.address': options.backendHost, 'url.path': path },
        },
        context,
      )
      const carrier: Record<string, string> = {}
      propagator.inject(api.trace.setSpan(api.ROOT_CONTEXT, span), carrier, {
        set: (c, key, value) => {
          c[key] = value
        },
      })
      return {
        headers: carrier,
        end(status, error) {
          if (status !== undefined) span.setAttribute('http.response.status_code', status)
          if (error !== undefined) {
            span.setAttribute('error.type', error)
            span.setStatus({ code: api.SpanStatusCode.ERROR })
          } else if (status !== undefined && status >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR })
          span.end()
        },
      }
    },
  }
}
