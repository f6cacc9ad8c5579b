import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { SpanKind } from '@opentelemetry/api'
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { startFakeBackend, type FakeBackend } from '../support/fake-backend.ts'

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c'
const CLIENT_PARENT = `00-${CLIENT_TRACE}-b7ad6b7169203331-01`

describe('tracing', () => {
  let backend: FakeBackend
  let exporter: InMemorySpanExporter
  let app: FastifyInstance
  let trusting: FastifyInstance

  before(async () => {
    backend = await startFakeBackend()
    exporter = new InMemorySpanExporter()
    const rateLimit = loadRateLimitSettings({
      AUTHGATE_RATE_LIMIT: '1/5m',
      AUTHGATE_RATE_LIMITED_ROUTES: 'POST /otp',
      AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /token=off',
    })
    app = await buildApp({
      config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
      rateLimit,
      logger: false,
      tracing: { exporter },
    })
    // The same service behind a trusted proxy (the test's own address).
    trusting = await buildApp({
      config: {
        backendUrl: parseBackendUrl('test', backend.url),
        cacheTtlMs: 0,
        trustedProxies: ['127.0.0.1/32'],
      },
      logger: false,
      tracing: { exporter },
    })
  })
  after(async () => {
    await app?.close()
    await trusting?.close()
    await backend?.close()
  })

  it('makes a server span per request and a client span per backend call, and tells the backend the latter', async () => {
    exporter.reset()
    backend.requests.length = 0
    const res = await app.inject({ method: 'GET', url: '/auth/settings' })
    assert.equal(res.statusCode, 200)
    const spans = exporter.getFinishedSpans()
    const server = spans.find((s) => s.kind === SpanKind.SERVER)
    const client = spans.find((s) => s.kind === SpanKind.CLIENT)
    assert.ok(server && client, spans.map((s) => s.name).join(', '))
    assert.equal(server.name, 'GET /auth/settings')
    assert.equal(server.attributes['http.route'], '/auth/settings')
    assert.equal(server.attributes['http.response.status_code'], 200)
    assert.equal(server.attributes['authgate.request_id'], res.headers['x-request-id'])
    assert.equal(client.name, 'GET')
    assert.equal(client.attributes['url.path'], '/settings')
    assert.equal(client.attributes['http.response.status_code'], 200)
    assert.equal(client.parentSpanContext?.spanId, server.spanContext().spanId)
    assert.equal(client.spanContext().traceId, server.spanContext().traceId)
    // Supabase Auth hears of the client span, so its own spans hang under it.
    const sent = backend.requests[0]!.headers.traceparent
    assert.equal(sent, `00-${client.spanContext().traceId}-${client.spanContext().spanId}-01`)
  })

  it("starts a new trace for a client's own traceparent, and does not pass it on", async () => {
    exporter.reset()
    backend.requests.length = 0
    await app.inject({ method: 'GET', url: '/auth/settings', headers: { traceparent: CLIENT_PARENT } })
    const server = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER)!
    assert.notEqual(server.spanContext().traceId, CLIENT_TRACE)
    assert.equal(server.parentSpanContext, undefined)
    assert.ok(!String(backend.requests[0]!.headers.traceparent).includes(CLIENT_TRACE))
  })

  it("continues a trusted proxy's trace", async () => {
    exporter.reset()
    backend.requests.length = 0
    await trusting.inject({
      method: 'GET',
      url: '/auth/settings',
      headers: { traceparent: CLIENT_PARENT },
      remoteAddress: '127.0.0.1',
    })
    const server = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER)!
    assert.equal(server.spanContext().traceId, CLIENT_TRACE)
    assert.equal(server.parentSpanContext?.spanId, 'b7ad6b7169203331')
    assert.match(String(backend.requests[0]!.headers.traceparent), new RegExp(`^00-${CLIENT_TRACE}-`))
  })

  it('records a rate-limit refusal as an event of the server span', async () => {
    exporter.reset()
    const otp = { method: 'POST' as const, url: '/auth/otp', payload: { email: 'a@example.com' } }
    assert.equal((await app.inject(otp)).statusCode, 200)
    assert.equal((await app.inject(otp)).statusCode, 429)
    const refused = exporter
      .getFinishedSpans()
      .filter((s) => s.kind === SpanKind.SERVER)
      .find((s) => s.attributes['http.response.status_code'] === 429)!
    assert.deepEqual(
      refused.events.map((e) => [e.name, e.attributes]),
      [['rate_limit.denied', { limit: 'client', route: 'POST /otp' }]],
    )
  })

  it('marks a failed backend exchange on the client span', async () => {
    exporter.reset()
    const saved = backend.handler
    backend.handler = (_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{}')
    try {
      await app.inject({ method: 'GET', url: '/auth/settings' })
    } finally {
      backend.handler = saved
    }
    const client = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.CLIENT)!
    assert.equal(client.attributes['http.response.status_code'], 503)
    assert.equal(client.status.code, 2) // ERROR
  })
})

describe('tracing off (the default)', () => {
  it("installs nothing, and the client's traceparent reaches the backend as before", async () => {
    const backend = await startFakeBackend()
    const app = await buildApp({
      config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
      logger: false,
    })
    try {
      await app.inject({ method: 'GET', url: '/auth/settings', headers: { traceparent: CLIENT_PARENT } })
      assert.equal(backend.requests[0]!.headers.traceparent, CLIENT_PARENT)
      assert.equal(app.authgate.forwarder.tracer, undefined)
    } finally {
      await app.close()
      await backend.close()
    }
  })
})

describe('tracing over OTLP/HTTP', () => {
  it('sends the spans to the OTLP endpoint of the standard variables when the service closes', async () => {
    const received: Array<{ path: string; type: string | undefined; body: string }> = []
    const receiver = createServer((req, res) => {
      let body = ''
      req.setEncoding('utf8')
      req.on('data', (c: string) => (body += c))
      req.on('end', () => {
        received.push({ path: req.url ?? '', type: req.headers['content-type'], body })
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      })
    })
    await new Promise<void>((ready) => receiver.listen(0, '127.0.0.1', ready))
    const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
    const backend = await startFakeBackend()
    const saved = { endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, name: process.env.OTEL_SERVICE_NAME }
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint
    process.env.OTEL_SERVICE_NAME = 'authgate-test'
    try {
      const app = await buildApp({
        config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0, tracing: 'otlp' },
        logger: false,
      })
      await app.inject({ method: 'GET', url: '/auth/settings' })
      await app.close()
      assert.equal(received.length, 1, 'one batch, flushed on close')
      const [batch] = received
      assert.equal(batch!.path, '/v1/traces')
      assert.match(batch!.body, /"authgate-test"/)
      assert.match(batch!.body, /GET \/auth\/settings/)
    } finally {
      for (const [name, value] of [
        ['OTEL_EXPORTER_OTLP_ENDPOINT', saved.endpoint],
        ['OTEL_SERVICE_NAME', saved.name],
      ] as const) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
      receiver.close()
      await backend.close()
    }
  })
})
