/**
 * Whether a flood of `/metrics` scrapes slows the cluster primary's rate-limit answers. Measures,
 * never judges (no pass/fail).
 *   node bench/metrics-flood.ts [--workers 2] [--scrapes 1000] [--takes 200] [--seconds 10]
 *
 * authgate runs with AUTHGATE_WORKERS workers and no Redis: the primary owns the one rate-limit
 * store and answers every worker's take over IPC, and it is also where every scrape is collected.
 * One client spends its budget at once, so each later `POST /auth/otp` is a take answered by the
 * primary and a 429, with no backend in the way: its latency is the take's round trip plus the
 * worker's own work. A worker gives up on a take after 1 s and the default policy then lets the
 * request through (a 502 here, the backend being absent): every answer that is not a 429 is a
 * request the limit should have stopped. Measured without scrapes, then under `--scrapes` per
 * second on the public port, with the primary's CPU time from /proc.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { Pool } from 'undici'

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '2' },
    scrapes: { type: 'string', default: '1000' },
    takes: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '10' },
  },
})
const WORKERS = Number(values.workers)
const SCRAPES_PER_SECOND = Number(values.scrapes)
const TAKES_PER_SECOND = Number(values.takes)
const SECONDS = Number(values.seconds)
const ROOT = new URL('..', import.meta.url)

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  await new Promise<void>((r) => server.close(() => r()))
  return port
}

const port = await freePort()
const child = spawn(process.execPath, ['bin/authgate.js'], {
  cwd: ROOT,
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    AUTHGATE_WORKERS: String(WORKERS),
    // Nothing listens there: a request the limit lets through is answered 502.
    AUTHGATE_BACKEND_URL: 'http://127.0.0.1:9',
    AUTHGATE_RATE_LIMIT: '5/1h',
    AUTHGATE_LOG_LEVEL: 'error',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
})
const stop = () => child.exitCode === null && child.kill('SIGTERM')
process.on('exit', stop)

const origin = `http://127.0.0.1:${port}`
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${origin}/livez`)).ok) break
  } catch {
    // not up yet
  }
  if (i > 300) throw new Error('authgate did not start')
  await sleep(100)
}

/** User and system CPU time of a process, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

const takes = new Pool(origin, { connections: 32 })
const scrapes = new Pool(origin, { connections: 64 })
const body = JSON.stringify({ email: 'bench@example.com' })

async function take(): Promise<{ ms: number; status: number }> {
  const started = performance.now()
  const res = await takes.request({
    method: 'POST',
    path: '/auth/otp',
    headers: { 'content-type': 'application/json' },
    body,
  })
  await res.body.dump()
  return { ms: performance.now() - started, status: res.statusCode }
}

// The client's budget, spent: every take from here on is a refusal.
for (let i = 0; i < 10; i++) await take()

/** Calls `fn` `perSecond` times a second for `seconds`, at most `inFlight` at once; resolves when all ended. */
async function paced<T>(perSecond: number, seconds: number, inFlight: number, fn: () => Promise<T>): Promise<T[]> {
  const out: Promise<T>[] = []
  let running = 0
  let skipped = 0
  const start = performance.now()
  const total = Math.round(perSecond * seconds)
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / perSecond
    const wait = due - performance.now()
    if (wait > 1) await sleep(wait)
    if (running >= inFlight) {
      skipped++
      continue
    }
    running++
    out.push(
      fn().finally(() => {
        running--
      }),
    )
  }
  if (skipped > 0) console.log(`  (${skipped} calls skipped: ${inFlight} were still in flight)`)
  return Promise.all(out)
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

async function phase(name: string, scrapesPerSecond: number) {
  const cpuBefore = cpuMs(child.pid!)
  const started = performance.now()
  let scraped = 0
  let scrapeFailed = 0
  const flood =
    scrapesPerSecond > 0
      ? paced(scrapesPerSecond, SECONDS, 512, async () => {
          try {
            const res = await scrapes.request({ method: 'GET', path: '/metrics' })
            await res.body.dump()
            if (res.statusCode === 200) scraped++
            else scrapeFailed++
          } catch {
            scrapeFailed++
          }
        })
      : Promise.resolve([])
  const results = await paced(TAKES_PER_SECOND, SECONDS, 256, take)
  await flood
  const elapsed = (performance.now() - started) / 1000
  const primaryCpu = (cpuMs(child.pid!) - cpuBefore) / elapsed
  const ms = results.map((r) => r.ms).sort((a, b) => a - b)
  const through = results.filter((r) => r.status !== 429).length
  console.log(
    `${name}: takes ${results.length}, latency p50 ${percentile(ms, 0.5).toFixed(1)} ms, p99 ${percentile(ms, 0.99).toFixed(1)} ms, max ${ms.at(-1)!.toFixed(1)} ms; ` +
      `not refused ${through}; scrapes answered ${scraped} (${(scraped / elapsed).toFixed(0)}/s), failed ${scrapeFailed}; ` +
      `primary CPU ${primaryCpu.toFixed(0)} ms/s`,
  )
}

console.log(
  `authgate ×${WORKERS} workers, no Redis; ${TAKES_PER_SECOND} refused takes/s, ${SECONDS} s per phase, node ${process.version}`,
)
await phase('no scrapes', 0)
await phase(`${SCRAPES_PER_SECOND} scrapes/s`, SCRAPES_PER_SECOND)
await takes.close()
await scrapes.close()
stop()
