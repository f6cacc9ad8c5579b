import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Registry } from 'prom-client'
import { SCRAPE_REUSE_MS, sharedCollection, WorkerMetrics } from '../../src/observability/cluster-metrics.ts'

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
