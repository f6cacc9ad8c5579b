import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client'
import { RequestSeries } from '../../src/observability/request-series.ts'

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20]
const NAMES = {
  requests: { name: 'authgate_http_requests_total', help: 'Requests answered' },
  duration: { name: 'authgate_http_request_duration_seconds', help: 'Time to answer' },
}

/** prom-client's own Counter and Histogram, as the series stood before: the reference. */
function reference() {
  const registry = new Registry()
  const requests = new Counter({ ...NAMES.requests, labelNames: ['route', 'method', 'status'], registers: [registry] })
  const duration = new Histogram({
    ...NAMES.duration,
    labelNames: ['route', 'method'],
    buckets: BUCKETS,
    registers: [registry],
  })
  return {
    registry,
    observe(route: string, method: string, status: number, seconds: number) {
      requests.inc({ route, method, status: String(status) })
      duration.observe({ route, method }, seconds)
    },
  }
}

function ours() {
  const registry = new Registry()
  const series = new RequestSeries(registry, NAMES, BUCKETS)
  return {
    registry,
    series,
    observe: (route: string, method: string, status: number, seconds: number) =>
      series.of(route, method).observe(status, seconds),
  }
}

// Answers across routes, methods, statuses, and every bucket edge (a value equal to a bound is in it).
const OBSERVATIONS: Array<[string, string, number, number]> = [
  ['/auth/token', 'POST', 200, 0.004],
  ['/auth/token', 'POST', 429, 0.00002],
  ['/auth/token', 'POST', 429, 0.005],
  ['/auth/token', 'POST', 400, 0.0051],
  ['/auth/token', 'GET', 405, 0.3],
  ['/auth/settings', 'GET', 200, 1],
  ['/auth/settings', 'GET', 200, 25],
  ['/auth/passkeys/:id', 'DELETE', 204, 20],
  ['', 'GET', 404, 0.01],
  ...BUCKETS.map((b): [string, string, number, number] => ['/auth/user', 'GET', 200, b]),
]

const sortedLines = (text: string) => text.split('\n').filter(Boolean).sort()
/** JSON with its keys in order, to sort values by. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  )
const sortedJson = async (registry: Registry) =>
  (await registry.getMetricsAsJSON()).map((m) => ({
    ...m,
    values: [...m.values].sort((a, b) => canonical(a).localeCompare(canonical(b))),
  }))

describe('request series', () => {
  it('exposes exactly what prom-client’s Counter and Histogram expose for the same answers', async () => {
    const ref = reference()
    const got = ours()
    for (const o of OBSERVATIONS) {
      ref.observe(...o)
      got.observe(...o)
    }
    assert.deepEqual(sortedLines(await got.registry.metrics()), sortedLines(await ref.registry.metrics()))
    // As JSON, what the cluster's workers send (prom-client's `exemplar: undefined` is no property there).
    assert.deepEqual(
      JSON.parse(canonical(await sortedJson(got.registry))),
      JSON.parse(canonical(await sortedJson(ref.registry))),
    )
  })

  it('shows nothing for a series resolved ahead and not yet used, as prom-client shows no label set it never saw', async () => {
    const got = ours()
    got.series.of('/auth/token', 'POST')
    const text = await got.registry.metrics()
    assert.doesNotMatch(text, /route=/)
    assert.match(text, /# TYPE authgate_http_requests_total counter/)
    assert.match(text, /# TYPE authgate_http_request_duration_seconds histogram/)
  })

  it('is summed across a cluster’s workers as prom-client sums its own', async () => {
    const refs = [reference(), reference()]
    const gots = [ours(), ours()]
    OBSERVATIONS.forEach((o, i) => {
      refs[i % 2]!.observe(...o)
      gots[i % 2]!.observe(...o)
    })
    const merged = async (registries: Registry[]) =>
      AggregatorRegistry.aggregate(await Promise.all(registries.map((r) => r.getMetricsAsJSON()))).metrics()
    assert.deepEqual(
      sortedLines(await merged(gots.map((g) => g.registry))),
      sortedLines(await merged(refs.map((r) => r.registry))),
    )
  })

  it('is exposed in the OpenMetrics format as prom-client exposes its own', async () => {
    const ref = reference()
    const got = ours()
    for (const registry of [ref.registry, got.registry])
      // The registries are typed for the text format; the content type is switched at run time.
      registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE as never)
    for (const o of OBSERVATIONS) {
      ref.observe(...o)
      got.observe(...o)
    }
    assert.deepEqual(sortedLines(await got.registry.metrics()), sortedLines(await ref.registry.metrics()))
  })

  it('starts again from zero on resetMetrics, and keeps counting after it', async () => {
    const ref = reference()
    const got = ours()
    const resolved = got.series.of('/auth/token', 'POST')
    for (const o of OBSERVATIONS) {
      ref.observe(...o)
      got.observe(...o)
    }
    ref.registry.resetMetrics()
    got.registry.resetMetrics()
    assert.deepEqual(sortedLines(await got.registry.metrics()), sortedLines(await ref.registry.metrics()))
    ref.observe('/auth/token', 'POST', 429, 0.001)
    resolved.observe(429, 0.001)
    assert.deepEqual(sortedLines(await got.registry.metrics()), sortedLines(await ref.registry.metrics()))
  })
})

describe('a duration series by route and status (the backend’s)', () => {
  const BACKEND = {
    duration: { name: 'authgate_backend_request_duration_seconds', help: 'Time the backend took' },
  }
  it('exposes exactly what prom-client’s Histogram by route and status exposes, and no counter', async () => {
    const refRegistry = new Registry()
    const ref = new Histogram({
      ...BACKEND.duration,
      labelNames: ['route', 'status'],
      buckets: BUCKETS,
      registers: [refRegistry],
    })
    const registry = new Registry()
    const got = new RequestSeries(registry, BACKEND, BUCKETS, 'status')
    for (const [route, , status, seconds] of OBSERVATIONS) {
      ref.observe({ route, status: String(status) }, seconds)
      got.of(route, String(status)).time(seconds)
    }
    ref.observe({ route: '/auth/token', status: 'none' }, 0.2)
    got.of('/auth/token', 'none').time(0.2)
    assert.deepEqual(sortedLines(await registry.metrics()), sortedLines(await refRegistry.metrics()))
    assert.deepEqual(
      JSON.parse(canonical(await sortedJson(registry))),
      JSON.parse(canonical(await sortedJson(refRegistry))),
    )
  })
})
