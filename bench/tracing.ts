// What tracing costs: the same service with AUTHGATE_TRACING off and =otlp (spans exported to a
// local OTLP/HTTP sink), in alternating rounds of wrk against GET /auth/settings (forwarded, cache
// off) on one fake backend. Usage: node bench/tracing.ts [--rounds 3] [--duration 5]
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'

const execFileAsync = promisify(execFile)
const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, duration: { type: 'string', default: '5' } },
})
const rounds = Number(values.rounds)
const duration = Number(values.duration)
const root = fileURLToPath(new URL('..', import.meta.url))

async function listen(server: Server): Promise<number> {
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
  return (server.address() as AddressInfo).port
}

const backend = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"external":{},"mailer_autoconfirm":true}')
})
let spans = 0
const sink = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    spans++
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
})
const backendPort = await listen(backend)
const sinkPort = await listen(sink)

async function start(tracing: 'off' | 'otlp', port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      AUTHGATE_BACKEND_URL: `http://127.0.0.1:${backendPort}`,
      AUTHGATE_CACHE_TTL: 'off',
      AUTHGATE_LOG_LEVEL: 'warn',
      AUTHGATE_RATE_LIMITED_ROUTES: 'none',
      AUTHGATE_TRACING: tracing,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}`,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/livez`)).ok) return child
    } catch {
      // not yet
    }
    await sleep(100)
  }
  throw new Error(`authgate (tracing ${tracing}) did not start`)
}

async function wrk(port: number): Promise<number> {
  const { stdout } = await execFileAsync('wrk', [
    '-t1',
    '-c8',
    `-d${duration}s`,
    `http://127.0.0.1:${port}/auth/settings`,
  ])
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1])
}

const off = await start('off', 18201)
const on = await start('otlp', 18202)
const results: Record<'off' | 'otlp', number[]> = { off: [], otlp: [] }
for (let i = 0; i < rounds; i++) {
  results.off.push(await wrk(18201))
  results.otlp.push(await wrk(18202))
}
off.kill('SIGTERM')
on.kill('SIGTERM')
await sleep(1000)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const m = { off: median(results.off), otlp: median(results.otlp) }
console.log(`tracing off:  ${results.off.map((r) => r.toFixed(0)).join(', ')} req/s (median ${m.off.toFixed(0)})`)
console.log(`tracing otlp: ${results.otlp.map((r) => r.toFixed(0)).join(', ')} req/s (median ${m.otlp.toFixed(0)})`)
console.log(`otlp / off: ${(m.otlp / m.off).toFixed(2)}; OTLP batches received: ${spans}`)
backend.close()
sink.close()
