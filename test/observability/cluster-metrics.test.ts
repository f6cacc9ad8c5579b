import assert from 'node:assert/strict'
import cluster from 'node:cluster'
import { EventEmitter } from 'node:events'
import { describe, it } from 'node:test'
import { Counter, Registry } from 'prom-client'
import {
  SCRAPE_REUSE_MS,
  servePrimaryMetrics,
  sharedCollection,
  WorkerMetrics,
} from '../../src/observability/cluster-metrics.ts'

/** A collection that ends when the test says so, counting how often it was started. */
function controlledCollection() {
  const runs: { resolve: (text: string) => void; reject: (err: Error) => void }[] = []
  const collect = () =>
    new Promise<string>((resolve, reject) => {
      runs.push({ resolve, reject })
    })
  return { collect, runs }
}

describe('sharedCollection', () => {
  it('gives concurrent scrapes one collection, and reuses its answer for a second', async () => {
    let clock = 0
    const { collect, runs } = controlledCollection()
    const scrape = sharedCollection(collect, SCRAPE_REUSE_MS, () => clock)
    const flood = Array.from({ length: 100 }, () => scrape())
    assert.equal(runs.length, 1)
    runs[0]!.resolve('one')
    assert.deepEqual(new Set(await Promise.all(flood)), new Set(['one']))
    clock += SCRAPE_REUSE_MS - 1
    assert.equal(await scrape(), 'one')
    assert.equal(runs.length, 1)
    clock += 1
    const next = scrape()
    assert.equal(runs.length, 2)
    runs[1]!.resolve('two')
    assert.equal(await next, 'two')
  })

  it('does not reuse a failed collection', async () => {
    const { collect, runs } = controlledCollection()
    const scrape = sharedCollection(collect, SCRAPE_REUSE_MS, () => 0)
    const failed = scrape()
    runs[0]!.reject(new Error('a worker went away'))
    await assert.rejects(failed)
    const retried = scrape()
    assert.equal(runs.length, 2)
    runs[1]!.resolve('ok')
    assert.equal(await retried, 'ok')
  })
})

describe('WorkerMetrics', () => {
  it('asks the primary once for a flood of concurrent scrapes', async (t) => {
    const sent: { authgate: string; id: number }[] = []
    const hadSend = Object.hasOwn(process, 'send')
    const original = process.send
    const wasConnected = process.connected
    process.send = ((message: { authgate: string; id: number }) => {
      sent.push(message)
      return true
    }) as typeof process.send
    Object.defineProperty(process, 'connected', { value: true, configurable: true })
    t.after(() => {
      if (hadSend) process.send = original
      else delete process.send
      Object.defineProperty(process, 'connected', { value: wasConnected, configurable: true })
    })
    const metrics = new WorkerMetrics(new Registry())
    t.after(() => metrics.close())
    const flood = Array.from({ length: 50 }, () => metrics.metrics())
    const scrapes = sent.filter((m) => m.authgate === 'metrics-scrape')
    assert.equal(scrapes.length, 1)
    process.emit('message', { authgate: 'metrics-scraped', id: scrapes[0]!.id, text: 'all workers' }, undefined)
    assert.deepEqual(new Set(await Promise.all(flood)), new Set(['all workers']))
  })
})

describe('servePrimaryMetrics', () => {
  it('answers every worker’s concurrent scrapes with one collection from the workers', async (t) => {
    const toWorker: { authgate: string; id: number; text?: string }[] = []
    const worker = Object.assign(new EventEmitter(), {
      id: 9001,
      isConnected: () => true,
      send: (message: { authgate: string; id: number; text?: string }) => {
        toWorker.push(message)
        return true
      },
    })
    const workers = cluster.workers as Record<string, unknown>
    workers[worker.id] = worker
    t.after(() => delete workers[worker.id])
    servePrimaryMetrics()
    for (let id = 1; id <= 50; id++) cluster.emit('message', worker, { authgate: 'metrics-scrape', id })
    // The scrapes are taken up in a later turn than the messages that brought them (rate-limit takes first).
    assert.equal(toWorker.length, 0)
    await new Promise((r) => setImmediate(r))
    const collects = toWorker.filter((m) => m.authgate === 'metrics-collect')
    assert.equal(collects.length, 1)
    const registry = new Registry()
    new Counter({ name: 'demo_total', help: 'a counter', registers: [registry] }).inc(3)
    cluster.emit('message', worker, {
      authgate: 'metrics-collected',
      id: collects[0]!.id,
      metrics: await registry.getMetricsAsJSON(),
    })
    const deadline = Date.now() + 10_000
    while (toWorker.filter((m) => m.authgate === 'metrics-scraped').length < 50 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5))
    const answers = toWorker.filter((m) => m.authgate === 'metrics-scraped')
    assert.equal(answers.length, 50)
    assert.ok(answers.every((a) => /^demo_total 3$/m.test(a.text ?? '')))
    assert.equal(toWorker.filter((m) => m.authgate === 'metrics-collect').length, 1)
  })
})
