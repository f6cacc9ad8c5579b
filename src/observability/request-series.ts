import type { Metric, Registry } from 'prom-client'

/**
 * One route template and method's answers: counts by status and a duration histogram, in plain
 * numbers. Resolved once (per route, or per request by two map lookups) and then counted with an
 * increment: prom-client hashes a label object on every `inc` and `observe` (about 0.45 µs for the
 * two series here, measured with Node.js 24), which on the early 429 path was a twentieth of the
 * whole answer.
 */
export class RouteSeries {
  readonly route: string
  /** The second label's value: the method, or for the backend's durations the status. */
  readonly method: string
  readonly statuses = new Map<number, number>()
  /** Observations per bucket (not cumulative): one per upper bound, then +Inf. */
  readonly buckets: Float64Array
  sum = 0
  count = 0
  readonly #bounds: readonly number[]

  constructor(route: string, method: string, bounds: readonly number[]) {
    this.route = route
    this.method = method
    this.#bounds = bounds
    this.buckets = new Float64Array(bounds.length + 1)
  }

  observe(status: number, seconds: number): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1)
    this.time(seconds)
  }

  /** A duration alone (a series whose second label is not the method: see RequestSeries). */
  time(seconds: number): void {
    const bounds = this.#bounds
    let i = 0
    while (i < bounds.length && seconds > bounds[i]!) i++
    this.buckets[i]!++
    this.sum += seconds
    this.count++
  }
}

interface SeriesNames {
  /** Left out: the duration histogram alone. */
  requests?: { name: string; help: string }
  duration: { name: string; help: string }
}

/**
 * `authgate_http_requests_total{route,method,status}` and `authgate_http_request_duration_seconds
 * {route,method}` of every route, read by the registry at each scrape. The two are metric objects
 * the registry reads as it reads its own counters and histograms (`get()` in prom-client's JSON
 * shape, so the text format and the cluster aggregation stay prom-client's); the values are
 * exactly what a prom-client Counter and Histogram fed the same observations would expose.
 */
export class RequestSeries {
  readonly #bounds: readonly number[]
  readonly #byRoute = new Map<string, Map<string, RouteSeries>>()
  /** The histogram's label beside `route`: `method`, or `status` for the backend's durations. */
  readonly #label: string

  constructor(registry: Registry, names: SeriesNames, bounds: readonly number[], label = 'method') {
    this.#bounds = bounds
    this.#label = label
    const { requests } = names
    if (requests !== undefined)
      registry.registerMetric(this.#metric(requests.name, requests.help, 'counter', () => this.#counts()))
    registry.registerMetric(
      this.#metric(names.duration.name, names.duration.help, 'histogram', () => this.#histogram(names.duration.name)),
    )
  }

  /** The series of a route template and method, created on first use. */
  of(route: string, method: string): RouteSeries {
    let byMethod = this.#byRoute.get(route)
    if (byMethod === undefined) this.#byRoute.set(route, (byMethod = new Map()))
    let series = byMethod.get(method)
    if (series === undefined) byMethod.set(method, (series = new RouteSeries(route, method, this.#bounds)))
    return series
  }

  *#all(): Generator<RouteSeries> {
    for (const byMethod of this.#byRoute.values()) yield* byMethod.values()
  }

  #counts(): Value[] {
    const values: Value[] = []
    for (const s of this.#all())
      for (const [status, count] of s.statuses)
        values.push({ labels: { route: s.route, method: s.method, status: String(status) }, value: count })
    return values
  }

  #histogram(name: string): Value[] {
    const values: Value[] = []
    for (const s of this.#all()) {
      if (s.count === 0) continue
      const labels = { route: s.route, [this.#label]: s.method }
      let cumulative = 0
      this.#bounds.forEach((le, i) => {
        cumulative += s.buckets[i]!
        values.push({ labels: { le, ...labels }, value: cumulative, metricName: `${name}_bucket`, exemplar: null })
      })
      values.push({ labels: { le: '+Inf', ...labels }, value: s.count, metricName: `${name}_bucket`, exemplar: null })
      values.push({ labels, value: s.sum, metricName: `${name}_sum` })
      values.push({ labels, value: s.count, metricName: `${name}_count` })
    }
    return values
  }

  #metric(name: string, help: string, type: 'counter' | 'histogram', values: () => Value[]): Metric {
    const reset = () => {
      for (const s of this.#all()) {
        if (type === 'counter') s.statuses.clear()
        else {
          s.buckets.fill(0)
          s.sum = 0
          s.count = 0
        }
      }
    }
    // What the registry reads of a metric: its name (which it rewrites for OpenMetrics, as it does
    // a Counter's), type and help for the exposition, `get` for the values, `reset` for
    // resetMetrics. The rest of prom-client's Metric is for code that records.
    const metric = {
      name,
      help,
      type,
      get: async () => ({ name: metric.name, help, type, aggregator: 'sum' as const, values: values() }),
      reset,
    }
    return metric as unknown as Metric
  }
}

interface Value {
  labels: Record<string, string | number>
  value: number
  metricName?: string
  /** prom-client's histogram buckets carry one (none here). */
  exemplar?: null
}
