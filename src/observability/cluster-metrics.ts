import cluster, { type Worker } from 'node:cluster'
import { AggregatorRegistry, Registry } from 'prom-client'

/**
 * Metrics of a cluster (AUTHGATE_WORKERS > 1) as one: a scrape reaches whichever worker the primary
 * hands the connection to, so that worker asks the primary, which collects every worker's registry
 * over the IPC channel and merges them with prom-client's aggregation (counters and histograms
 * summed, gauges by their own `aggregator`). Counters never go backwards: the last counts of a
 * worker that exits stay in the sum after it is gone.
 */

/** One worker's registry, as `getMetricsAsJSON` gives it. */
type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>

interface CollectRequest {
  authgate: 'metrics-collect'
  id: number
}
interface CollectReply {
  authgate: 'metrics-collected'
  id: number
  metrics: MetricsJson
}
interface ScrapeRequest {
  authgate: 'metrics-scrape'
  id: number
}
interface ScrapeReply {
  authgate: 'metrics-scraped'
  id: number
  text?: string
  error?: string
}

const kind = (m: unknown): string | undefined =>
  typeof m === 'object' && m !== null ? ((m as { authgate?: unknown }).authgate as string | undefined) : undefined

/** The answer to a scrape: what `Registry` offers, so the two are interchangeable. */
export interface MetricsSource {
  readonly contentType: string
  metrics(): Promise<string>
}

/** Longest a scrape waits for the primary, and the primary for a worker. */
const TIMEOUT_MS = 5000

/**
 * How long one collection answers further scrapes. Prometheus scrapes every 15 s or so; a flood of
 * scrapes (the metrics path is unauthenticated) then costs one collection a second, however many.
 */
export const SCRAPE_REUSE_MS = 1000

/**
 * `collect` shared: calls while a collection runs get its answer, and so do calls within `reuseMs`
 * after it ended. A failed collection is not reused: the next call collects again.
 */
export function sharedCollection(
  collect: () => Promise<string>,
  reuseMs = SCRAPE_REUSE_MS,
  now: () => number = () => performance.now(),
): () => Promise<string> {
  let current: Promise<string> | undefined
  // While a collection runs, Infinity; once it ended, when its answer stops being reused.
  let reusableUntil = 0
  return () => {
    if (current !== undefined && now() < reusableUntil) return current
    const collection = collect()
    current = collection
    reusableUntil = Infinity
    collection.then(
      () => {
        if (current === collection) reusableUntil = now() + reuseMs
      },
      () => {
        if (current === collection) current = undefined
      },
    )
    return collection
  }
}

/**
 * In a worker: answers the primary's collection requests with this registry, and answers scrapes
 * with the whole cluster's metrics (from the primary).
 */
export class WorkerMetrics implements MetricsSource {
  readonly #registry: Registry
  readonly #pending = new Map<number, (reply: ScrapeReply) => void>()
  #nextId = 1
  // Concurrent scrapes of this worker ask the primary once (SCRAPE_REUSE_MS).
  readonly #scrape = sharedCollection(() => this.#askPrimary())
  readonly #onMessage = (message: unknown) => {
    const k = kind(message)
    if (k === 'metrics-collect') {
      const { id } = message as CollectRequest
      void this.#registry.getMetricsAsJSON().then((metrics) => {
        if (process.connected) process.send!({ authgate: 'metrics-collected', id, metrics } satisfies CollectReply)
      })
    } else if (k === 'metrics-scraped') {
      const reply = message as ScrapeReply
      this.#pending.get(reply.id)?.(reply)
    }
  }

  constructor(registry: Registry) {
    if (!process.send) throw new Error('WorkerMetrics runs in a cluster worker only')
    this.#registry = registry
    process.on('message', this.#onMessage)
  }

  get contentType(): string {
    return this.#registry.contentType
  }

  metrics(): Promise<string> {
    return this.#scrape()
  }

  #askPrimary(): Promise<string> {
    return new Promise((resolve, reject) => {
      const id = this.#nextId++
      const timer = setTimeout(() => {
        this.#pending.delete(id)
        reject(new Error('the cluster primary did not answer the scrape in time'))
      }, TIMEOUT_MS)
      this.#pending.set(id, (reply) => {
        clearTimeout(timer)
        this.#pending.delete(id)
        if (reply.text !== undefined) resolve(reply.text)
        else reject(new Error(reply.error ?? 'no metrics'))
      })
      if (!process.connected) return reject(new Error('the cluster primary went away'))
      process.send!({ authgate: 'metrics-scrape', id } satisfies ScrapeRequest)
    })
  }

  close(): void {
    process.off('message', this.#onMessage)
  }
}

/** Only what keeps counting: a gone worker's gauges (memory, connections) no longer hold. */
function monotonic(metrics: MetricsJson): MetricsJson {
  return metrics.filter(
    (m) => (m.type as unknown as string) === 'counter' || (m.type as unknown as string) === 'histogram',
  )
}

/**
 * In the primary: collects and merges the workers' metrics for any worker's scrape. Returns the
 * collection, for tests and for a listener the primary might hold itself.
 */
export function servePrimaryMetrics(): { collect(): Promise<string> } {
  const last = new Map<number, MetricsJson>()
  // Kept as they were at each worker's exit; restarts are rare, so the list stays short.
  const retired: MetricsJson[] = []
  let nextId = 1
  const pending = new Map<number, { worker: number; resolve: (m: MetricsJson) => void }>()

  const collectFrom = (worker: Worker): Promise<void> =>
    new Promise((resolve) => {
      const id = nextId++
      // A worker that does not answer in time counts with its last answer.
      const timer = setTimeout(() => {
        pending.delete(id)
        resolve()
      }, TIMEOUT_MS)
      pending.set(id, {
        worker: worker.id,
        resolve: (metrics) => {
          clearTimeout(timer)
          pending.delete(id)
          last.set(worker.id, metrics)
          resolve()
        },
      })
      worker.send({ authgate: 'metrics-collect', id } satisfies CollectRequest)
    })

  // Every worker's scrapes share one collection (SCRAPE_REUSE_MS): the primary also answers the
  // workers' rate-limit takes, which must not queue behind a collection per scrape.
  const collect = sharedCollection(async (): Promise<string> => {
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w?.isConnected() === true)
    await Promise.all(workers.map(collectFrom))
    const all = [...last.values(), ...retired].filter((m) => m.length > 0)
    // A turn of its own: takes that arrived with the last worker's answer are answered first.
    await new Promise((resolve) => setImmediate(resolve))
    return AggregatorRegistry.aggregate(all).metrics()
  })

  const scrape = (worker: Worker, id: number) =>
    collect().then(
      (text) => worker.isConnected() && worker.send({ authgate: 'metrics-scraped', id, text } satisfies ScrapeReply),
      (err: unknown) =>
        worker.isConnected() &&
        worker.send({ authgate: 'metrics-scraped', id, error: String(err) } satisfies ScrapeReply),
    )
  cluster.on('message', (worker: Worker, message: unknown) => {
    const k = kind(message)
    if (k === 'metrics-collected') {
      const reply = message as CollectReply
      const p = pending.get(reply.id)
      if (p?.worker === worker.id) p.resolve(reply.metrics)
    } else if (k === 'metrics-scrape') {
      const { id } = message as ScrapeRequest
      // After this turn: rate-limit takes read from the channels with it are answered first.
      setImmediate(scrape, worker, id)
    }
  })
  cluster.on('exit', (worker: Worker) => {
    const metrics = last.get(worker.id)
    last.delete(worker.id)
    if (metrics !== undefined) retired.push(monotonic(metrics))
  })
  return { collect }
}
