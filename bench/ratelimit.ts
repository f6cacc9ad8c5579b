/**
 * Rate-limit decisions per second for each store. Measures, never judges (no pass/fail).
 *   node bench/ratelimit.ts [--seconds 2] [--redis redis://127.0.0.1:6379]
 * Redis cases are skipped (with the reason) when Redis does not answer.
 */
import { randomUUID } from 'node:crypto'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { MemoryStore } from '../src/ratelimit/memory-store.ts'
import type { RateLimitPolicy } from '../src/ratelimit/policy.ts'
import { RedisStore } from '../src/ratelimit/redis-store.ts'
import type { RateLimitStore } from '../src/ratelimit/store.ts'

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '2' }, redis: { type: 'string', default: 'redis://127.0.0.1:6379' } },
})
const SECONDS = Number(values.seconds)
const POLICY: RateLimitPolicy = { name: 'default', limit: 30, windowMs: 300_000, burst: 30 }
const CLIENTS = 10_000
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const heapUsed = () => (gc(), gc(), process.memoryUsage().heapUsed)
const keys = Array.from({ length: CLIENTS }, (_, i) => `/token|10.0.${i >> 8}.${i & 255}`)

interface Row {
  store: string
  mode: string
  decisionsPerSecond: number
  meanLatencyUs: number
}
const rows: Row[] = []

function record(store: string, mode: string, count: number, ms: number, inFlight: number) {
  rows.push({
    store,
    mode,
    decisionsPerSecond: Math.round((count / ms) * 1000),
    meanLatencyUs: Math.round(((ms * 1000) / count) * inFlight),
  })
}

async function measure(store: RateLimitStore, name: string, inFlight: number) {
  let count = 0
  const start = performance.now()
  const end = start + SECONDS * 1000
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      let i = worker
      while (performance.now() < end) {
        await store.take(keys[i++ % CLIENTS]!, POLICY)
        count++
      }
    }),
  )
  record(name, inFlight === 1 ? 'sequential' : `${inFlight} concurrent`, count, performance.now() - start, inFlight)
}

// Memory: the synchronous core, then through the async interface the hook uses.
{
  const store = new MemoryStore()
  let count = 0
  const start = performance.now()
  const end = start + SECONDS * 1000
  while (performance.now() < end) {
    for (let j = 0; j < 1000; j++) store.takeSync(keys[count++ % CLIENTS]!, POLICY)
  }
  record('memory', 'takeSync', count, performance.now() - start, 1)
  await measure(store, 'memory', 1)
  await store.close()
}

// Memory at the default cap: heap per bucket, and how long the timer's sliced sweep holds up the event loop.
{
  let now = 0
  const store = new MemoryStore({ now: () => now, sweepIntervalMs: 100 })
  const before = heapUsed()
  for (let i = 0; i < 500_000; i++) store.takeSync(`/token|10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, POLICY)
  const heapMiB = (heapUsed() - before) / 1024 / 1024
  const delay = monitorEventLoopDelay({ resolution: 1 })
  now = 1e9
  delay.enable()
  const t0 = performance.now()
  while (store.size > 0) await sleep(5)
  delay.disable()
  console.log(
    `memory store, 500,000 buckets (default cap): ~${heapMiB.toFixed(0)} MiB heap; ` +
      `sliced sweep dropped all in ${(performance.now() - t0).toFixed(0)} ms, longest event-loop stall ${(delay.max / 1e6).toFixed(1)} ms`,
  )
  await store.close()
}

const redis = new RedisStore({ url: values.redis, keyPrefix: `authgate-bench:${randomUUID()}:`, timeoutMs: 1000 })
if (await redis.ready(2000)) {
  await measure(redis, 'redis', 1)
  await measure(redis, 'redis', 16)
  await measure(redis, 'redis', 64)
  const stale = await redis.client.keys('authgate-bench:*')
  for (let i = 0; i < stale.length; i += 1000) await redis.client.del(...stale.slice(i, i + 1000))
} else {
  console.log(`redis: skipped, ${values.redis} not reachable`)
}
await redis.close()

console.log(`node ${process.version}, ${SECONDS} s per case, ${CLIENTS} distinct clients, policy 30/5m`)
console.table(rows)
