/**
 * Soak run: authgate under a constant mixed load for minutes, with faults on the way, watched from
 * outside for growth and for anything lost.
 *
 *   npm run soak                       # 1 minute
 *   npm run soak -- --minutes 10 [--rate 600] [--sample 5] [--after 90] [--sockets 32]
 *                   [--plot docs/soak-memory.svg] [--no-faults] [--sources] [--node-options '...']
 *
 * Processes, so that each figure is the gateway's alone and each fault is a real process's:
 * - a fake Supabase Auth (answers every forwarded request with a small JSON, serves the key set);
 * - a REST stand-in (a small JSON array) and a Storage stand-in (bench/peers/stand-ins.ts);
 * - a Realtime stand-in (bench/peers/stand-ins.ts: echoes each frame);
 * - Redis through Sentinel: a primary, a replica and three sentinels on ports of their own;
 * - authgate: the compiled service's `buildApp` (as the image runs it; `--sources` for src/) with the
 *   service's own settings (rate limits in Redis through Sentinel, REST, Storage and Realtime), token
 *   verification and one protected route, with the image's allocator (bench/allocator.ts) and
 *   NODE_ENV=production as the container image runs it;
 * - this one: the load (open loop, bench/load.ts), the Realtime clients (bench/soak/sockets.ts), the
 *   faults and the sampling.
 *
 * Load per second (scaled with --rate): sign-ins (`grant_type=password`) and refreshes
 * (`grant_type=refresh_token`), `GET /auth/settings`, `POST /auth/otp` from one client over its
 * limit (429), `/openapi.json` and `/docs`, a verified protected route, `GET /rest/v1/todos`, and
 * 512 KiB Storage downloads and uploads; plus --sockets Realtime sockets, each with a broadcast a
 * second and a heartbeat every 25 s.
 *
 * Faults (unless --no-faults), at 30, 50 and 70 % of the load: the auth backend killed (SIGKILL) and
 * started again on its port; `SENTINEL FAILOVER` (the replica becomes the primary); the Realtime
 * stand-in stopped as a restarting server stops (a close frame 1001 on each socket), down 2 s, started
 * again on its port.
 *
 * Nothing lost: every request due is answered or counted unanswered; an answer with a status the
 * route does not give is counted unexpected, except a 502/503/504 in authgate's error shape, which
 * is what authgate answers while a backend restarts (counted as answered, listed apart); the limited
 * route may answer 200 when Redis answers late or fails over (the failure policy, `open` by default:
 * counted apart, with the seconds of the run where answers were off the usual). Every socket
 * opened is accounted for: closed with a close frame, or resumed by its client, or reported.
 *
 * Memory: RSS and open descriptors from /proc/<pid>, V8 heap and external memory and event-loop delay
 * from the gateway's metrics, every --sample seconds from before the load to --after seconds after
 * it. The verdicts (issue budget: RSS ≤ 150 MB; back within 20 MB of idle a minute after the load)
 * are printed; the samples are written as JSON and drawn as SVG (--plot; the JSON beside it).
 * authgate's CPU time (user + system) over the load is printed per request answered. --node-options
 * is authgate's NODE_OPTIONS (a V8 setting tried against the budget, say).
 * Never pass/fail: it prints figures and verdicts, and exits 0.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { ERRORS } from '../src/errors.ts'
import { redisCli, SentinelSet } from '../test/ratelimit/support/redis-ha.ts'
import { constantRate, type RateResult, type RequestSpec } from './load.ts'
import { allocatorLabel, imageAllocatorEnv } from './allocator.ts'
import { serveRealtime, serveStorage } from './peers/stand-ins.ts'
import { ISSUE_BUDGET, memoryPlotSvg, memoryVerdicts, type Mark, type MemorySample } from './soak/memory.ts'
import { RealtimeClients } from './soak/sockets.ts'

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'driver' },
    minutes: { type: 'string', default: '1' },
    rate: { type: 'string', default: '600' },
    sample: { type: 'string', default: '5' },
    after: { type: 'string', default: '90' },
    sockets: { type: 'string', default: '32' },
    plot: { type: 'string' },
    'no-faults': { type: 'boolean', default: false },
    sources: { type: 'boolean', default: false },
    // As the container image runs it (Dockerfile's CMD).
    'node-options': { type: 'string', default: '--max-semi-space-size=8' },
  },
})

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const ISSUER = 'http://127.0.0.1/auth'

/** The fake Supabase Auth on SOAK_PORT: the key set (SOAK_JWKS), and a small JSON for everything else. */
async function runBackend(): Promise<void> {
  const jwks = process.env.SOAK_JWKS!
  const body = '{"external":{"email":true},"disable_signup":false,"mailer_autoconfirm":false}'
  const server = createHttpServer((req, res) => {
    req.resume()
    req.on('end', () => {
      if (req.url === '/.well-known/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=600' })
        res.end(jwks)
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(body)
    })
  })
  server.keepAliveTimeout = 120_000
  await new Promise<void>((resolve) => server.listen(Number(process.env.SOAK_PORT), '127.0.0.1', resolve))
  process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port }) + '\n')
}

/** PostgREST's stand-in on SOAK_REST_PORT, Storage's on SOAK_STORAGE_PORT. */
function runServices(): void {
  const rows = '[{"id":1,"task":"soak","done":false},{"id":2,"task":"memory","done":true}]'
  const rest = createHttpServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-range': '0-1/*' })
    res.end(rows)
  })
  rest.keepAliveTimeout = 120_000
  rest.listen(Number(process.env.SOAK_REST_PORT), '127.0.0.1', () => process.stdout.write('{}\n'))
  serveStorage(Number(process.env.SOAK_STORAGE_PORT))
}

/** Realtime's stand-in on SOAK_PORT; SIGTERM stops it as a restarting server stops (1001 on each socket). */
async function runRealtime(): Promise<void> {
  const realtime = serveRealtime(Number(process.env.SOAK_PORT))
  await realtime.listening
  process.on('SIGTERM', () => {
    setTimeout(() => process.exit(0), 1000).unref()
    void realtime.stop().then(() => process.exit(0))
  })
  process.stdout.write('{}\n')
}

/**
 * authgate as the service runs it (src/cli.ts): the young generation held small through start-up,
 * the service's settings, requests refused early and unrouted ones answered; plus one protected route.
 * Plain JavaScript given to `node -e`, importing the compiled service (SOAK_FROM, `.js`) or its
 * sources: the process holds authgate and nothing of the bench, and (compiled) not Node.js's
 * TypeScript support either, about 25 MB of a process that runs .ts files (bin/authgate.js).
 */
const GATEWAY = `
const from = (file) => new URL(file + process.env.SOAK_EXT, process.env.SOAK_FROM).href
const { growWithLoad } = await import(from('startup-heap'))
const { buildApp } = await import(from('app'))
const { loadServiceSettings } = await import(from('settings'))
const { defineRoute } = await import(from('routes-dsl/index'))
const settings = loadServiceSettings(process.env)
const app = await buildApp({
  config: settings.core,
  rateLimit: settings.rateLimit,
  openapi: settings.openapi,
  ...(settings.services ? { services: settings.services } : {}),
  logger: true,
  processMetrics: true,
  refuseEarly: true,
  answerUnrouted: true,
  protect: { issuer: process.env.SOAK_ISSUER, jwksUrl: new URL('/.well-known/jwks.json', settings.core.backendUrl.href) },
})
app.route(defineRoute({ method: 'GET', url: '/soak/me', auth: 'required', handler: async (request) => ({ id: request.user?.sub ?? null }) }))
app.server.once('connection', growWithLoad)
await app.listen({ port: 0, host: '127.0.0.1' })
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
process.stdout.write(JSON.stringify({ port: app.server.address().port }) + '\\n')
`

/** dist/ was built after the last change under src/ (as bin/authgate.js judges it). */
function distCurrent(): boolean {
  const built = join(ROOT, 'dist/app.js')
  if (!existsSync(built)) return false
  const at = statSync(built).mtimeMs
  return readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).every(
    (f) => statSync(join(ROOT, 'src', f)).mtimeMs <= at,
  )
}

/** A port the kernel hands out now (the faults restart a process on the port it had). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}

const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL')
})

/** One of this script's roles as a child process; resolves with the JSON line it prints when ready. */
function child(
  role: string,
  env: Record<string, string>,
  log?: string,
): Promise<{ proc: ChildProcess; info: unknown }> {
  const args =
    role === 'gateway' ? ['--input-type=module', '-e', GATEWAY] : [fileURLToPath(import.meta.url), '--role', role]
  const proc = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  running.add(proc)
  proc.once('exit', () => running.delete(proc))
  const logFile = log === undefined ? undefined : createWriteStream(log, { flags: 'a' })
  return new Promise((resolve, reject) => {
    let out = ''
    let ready = false
    proc.stdout!.on('data', (c: Buffer) => {
      // After the first line, the output (authgate's log) goes to its file, or nowhere.
      if (ready) {
        logFile?.write(c)
        return
      }
      out += c.toString('utf8')
      const nl = out.indexOf('\n')
      if (nl < 0) return
      ready = true
      logFile?.write(out.slice(nl + 1))
      resolve({ proc, info: JSON.parse(out.slice(0, nl)) })
    })
    proc.once('exit', (code) => {
      if (!ready) reject(new Error(`${role} exited with ${code}`))
    })
  })
}

async function stopChild(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  proc.kill(signal)
  await exited
}

/** User + system CPU time of a process so far (/proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

function metric(text: string, name: string, label?: string): number {
  const labels = label === undefined ? '(?:\\{[^}]*\\})?' : `\\{${label}\\}`
  const m = new RegExp(`^${name}${labels} (\\S+)$`, 'm').exec(text)
  return m ? Number(m[1]) : NaN
}

async function sample(pid: number, port: number, startedAt: number): Promise<MemorySample> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN)
  const fds = readdirSync(`/proc/${pid}/fd`).length
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  return {
    atS: Math.round(((performance.now() - startedAt) / 1000) * 10) / 10,
    rssMb: rssKb / 1024,
    heapMb: metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
    heapTotalMb: metric(text, 'nodejs_heap_size_total_bytes') / 2 ** 20,
    newSpaceMb: metric(text, 'nodejs_heap_space_size_total_bytes', 'space="new"') / 2 ** 20,
    externalMb: metric(text, 'nodejs_external_memory_bytes') / 2 ** 20,
    fds,
    loopP99Ms: metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
  }
}

/** authgate's own error answer: JSON with one of its error codes and the status as `code`. */
function inAuthgateShape(status: number, body: Buffer): boolean {
  try {
    const json = JSON.parse(body.toString('utf8')) as { code?: unknown; error_code?: unknown; msg?: unknown }
    return json.code === status && typeof json.error_code === 'string' && json.error_code in ERRORS
  } catch {
    return false
  }
}

interface Route {
  name: string
  share: number
  spec: RequestSpec
  /** The statuses the route gives when nothing fails. */
  expect: number[]
  /** Given when the rate limiter's store does not answer in time (its failure policy, `open` by default). */
  byPolicy?: number[]
}

async function runDriver(): Promise<void> {
  const minutes = Number(values.minutes)
  const rate = Number(values.rate)
  const sampleS = Number(values.sample)
  const afterS = Number(values.after)
  const socketCount = Number(values.sockets)
  const faults = !values['no-faults']
  if (!(minutes > 0) || !(rate > 0) || !(sampleS > 0) || !(afterS >= 0) || !(socketCount >= 0))
    throw new Error('--minutes, --rate and --sample must be > 0, --after and --sockets ≥ 0')
  const dir = mkdtempSync(join(tmpdir(), 'authgate-soak-'))
  if (!values.sources && !distCurrent()) execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' })

  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const kid = 'soak'
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }] })
  const ports = { backend: await freePort(), rest: await freePort(), storage: await freePort(), rt: await freePort() }
  const startBackend = () => child('backend', { SOAK_PORT: String(ports.backend), SOAK_JWKS: jwks })
  const startRealtime = () => child('realtime', { SOAK_PORT: String(ports.rt) })
  let backend = (await startBackend()).proc
  let realtime = (await startRealtime()).proc
  await child('services', { SOAK_REST_PORT: String(ports.rest), SOAK_STORAGE_PORT: String(ports.storage) })
  const sentinel = await SentinelSet.start()
  const gatewayLog = join(dir, 'authgate.log')
  const gateway = await child(
    'gateway',
    {
      SOAK_FROM: new URL(values.sources ? '../src/' : '../dist/', import.meta.url).href,
      SOAK_EXT: values.sources ? '.ts' : '.js',
      SOAK_ISSUER: ISSUER,
      NODE_ENV: 'production',
      ...imageAllocatorEnv(),
      ...(values['node-options'] ? { NODE_OPTIONS: values['node-options'] } : {}),
      AUTHGATE_BACKEND_URL: `http://127.0.0.1:${ports.backend}`,
      AUTHGATE_LOG_LEVEL: 'warn',
      AUTHGATE_CACHE_TTL: 'off',
      AUTHGATE_RATE_LIMITED_ROUTES: 'POST /otp',
      // One more request every 2.4 h: over any run, the limited route answers 429 throughout.
      AUTHGATE_RATE_LIMIT: '10/1d',
      // Every sign-in names one account: its own limit would answer 429 after ten.
      AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /token=off',
      AUTHGATE_REDIS_URL: sentinel.url,
      AUTHGATE_REDIS_KEY_PREFIX: `soak:${process.pid}:`,
      AUTHGATE_REST_URL: `http://127.0.0.1:${ports.rest}`,
      AUTHGATE_REST_DOCUMENT_REFRESH: 'off',
      AUTHGATE_STORAGE_URL: `http://127.0.0.1:${ports.storage}`,
      AUTHGATE_REALTIME_URL: `http://127.0.0.1:${ports.rt}`,
    },
    gatewayLog,
  )
  const { port } = gateway.info as { port: number }
  const pid = gateway.proc.pid!
  const token = await new SignJWT({
    sub: '8d0b1f0e-5c4e-4a5e-9a44-0b0b6f4c3b11',
    aud: 'authenticated',
    role: 'authenticated',
  })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
    .setIssuer(ISSUER)
    .setIssuedAt()
    .setExpirationTime(`${minutes * 60 + 600}s`)
    .sign(privateKey)
  const json = { 'content-type': 'application/json' }
  const upload = 'u'.repeat(512 * 1024)
  const routes: Route[] = [
    { name: 'GET /auth/settings', share: 0.15, spec: { method: 'GET', path: '/auth/settings' }, expect: [200] },
    {
      name: 'POST /auth/token (password)',
      share: 0.1,
      spec: {
        method: 'POST',
        path: '/auth/token?grant_type=password',
        headers: json,
        body: '{"email":"a@example.com","password":"secret123"}',
      },
      expect: [200],
    },
    {
      name: 'POST /auth/token (refresh)',
      share: 0.1,
      spec: {
        method: 'POST',
        path: '/auth/token?grant_type=refresh_token',
        headers: json,
        body: '{"refresh_token":"v1-soak-refresh-token"}',
      },
      expect: [200],
    },
    {
      name: 'POST /auth/otp (limited)',
      share: 0.1,
      spec: { method: 'POST', path: '/auth/otp', headers: json, body: '{"email":"a@example.com"}' },
      expect: [429],
      byPolicy: [200],
    },
    { name: 'GET /openapi.json', share: 0.03, spec: { method: 'GET', path: '/openapi.json' }, expect: [200] },
    { name: 'GET /docs', share: 0.02, spec: { method: 'GET', path: '/docs' }, expect: [200] },
    {
      name: 'GET /soak/me (verified)',
      share: 0.2,
      spec: { method: 'GET', path: '/soak/me', headers: { authorization: `Bearer ${token}` } },
      expect: [200],
    },
    {
      name: 'GET /rest/v1/todos',
      share: 0.29,
      spec: { method: 'GET', path: '/rest/v1/todos?select=*', headers: { apikey: 'soak-key' } },
      expect: [200],
    },
    {
      name: 'GET /storage/v1 512 KiB',
      share: 0.005,
      spec: { method: 'GET', path: '/storage/v1/object/bench/512kb', headers: { apikey: 'soak-key' } },
      expect: [200],
    },
    {
      name: 'POST /storage/v1 512 KiB',
      share: 0.005,
      spec: {
        method: 'POST',
        path: '/storage/v1/object/bench/upload',
        headers: { apikey: 'soak-key', 'content-type': 'application/octet-stream' },
        body: upload,
      },
      expect: [200],
    },
  ]
  // Every route must answer as expected before the clock starts, or the figures mean nothing; the
  // limited route is called until its budget is spent.
  for (const r of routes) {
    for (let i = 0; ; i++) {
      const res = await fetch(`http://127.0.0.1:${port}${r.spec.path}`, {
        method: r.spec.method,
        headers: r.spec.headers ?? {},
        ...(r.spec.body !== undefined ? { body: r.spec.body } : {}),
      })
      await res.arrayBuffer()
      if (r.expect.includes(res.status)) break
      if (res.status !== 200 || i > 100) throw new Error(`${r.name} answered ${res.status}`)
    }
  }
  // The idle process the return is judged against: start-up and the first answers behind it.
  await sleep(5000)

  const socketUrl = `ws://127.0.0.1:${port}/realtime/v1/websocket?apikey=soak-key&vsn=2.0.0`
  console.log(
    `soak: ${rate} req/s and ${socketCount} Realtime sockets for ${minutes} min against authgate pid ${pid} (port ${port}, ` +
      `${values.sources ? 'sources' : 'compiled'}, ${allocatorLabel}, NODE_ENV=production${values['node-options'] ? `, NODE_OPTIONS=${values['node-options']}` : ''}), faults ${faults ? 'on' : 'off'}; ` +
      `sampling every ${sampleS} s until ${afterS} s after the load; authgate's log: ${gatewayLog}`,
  )
  const startedAt = performance.now()
  const nowS = () => Math.round(((performance.now() - startedAt) / 1000) * 10) / 10
  const samples: MemorySample[] = [await sample(pid, port, startedAt)]
  const marks: Mark[] = []
  const print = (s: MemorySample) =>
    console.log(
      `  +${s.atS.toFixed(0).padStart(4)} s  RSS ${s.rssMb.toFixed(1)} MB  heap ${s.heapMb.toFixed(1)} of ${s.heapTotalMb.toFixed(1)} MB  young ${s.newSpaceMb.toFixed(0)} MB  external ${s.externalMb.toFixed(1)} MB  fds ${s.fds}  loop p99 ${s.loopP99Ms.toFixed(1)} ms`,
    )
  print(samples[0]!)
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      await sleep(sampleS * 1000)
      if (!sampling) break
      const s = await sample(pid, port, startedAt)
      samples.push(s)
      print(s)
    }
  })()

  const sockets = new RealtimeClients(socketUrl, socketCount)
  await sockets.start()
  const loadStartS = nowS()
  const cpuAtStart = cpuSeconds(pid)
  marks.push({ atS: loadStartS, label: 'load' })

  // Answers off the routes' usual statuses, per second of the run: where the faults show.
  const offSeconds = new Map<number, number>()
  const shaped: Record<number, number> = {}
  const unshaped: Record<number, number> = {}
  /** Answers the rate limiter's failure policy gave (Redis not answering in time: let through). */
  let byPolicy = 0
  const inspectFor = (r: Route) => (status: number, body: Buffer) => {
    if (r.expect.includes(status)) return
    if (r.byPolicy?.includes(status)) byPolicy++
    const second = Math.floor(nowS())
    offSeconds.set(second, (offSeconds.get(second) ?? 0) + 1)
    if (status >= 502 && status <= 504) {
      const table = inAuthgateShape(status, body) ? shaped : unshaped
      table[status] = (table[status] ?? 0) + 1
    }
  }

  const totalMs = minutes * 60_000
  const faultLog: string[] = []
  const note = (what: string, label?: string) => {
    const atS = nowS()
    faultLog.push(`  +${atS.toFixed(1).padStart(6)} s  ${what}`)
    console.log(`  +${atS.toFixed(1).padStart(6)} s  fault: ${what}`)
    if (label !== undefined) marks.push({ atS, label })
  }
  const schedule: Array<{ at: number; run: () => Promise<void> }> = faults
    ? [
        {
          at: 0.3,
          run: async () => {
            note('auth backend killed (SIGKILL)', 'auth backend restart')
            await stopChild(backend, 'SIGKILL')
            backend = (await startBackend()).proc
            note('auth backend answering again on its port')
          },
        },
        {
          at: 0.5,
          run: async () => {
            const before = sentinel.currentPrimary()
            note(`SENTINEL FAILOVER (primary ${before})`, 'Redis failover')
            redisCli(sentinel.sentinels[0]!, 'SENTINEL', 'FAILOVER', sentinel.master)
            for (let i = 0; i < 200 && sentinel.currentPrimary() === before; i++) await sleep(100)
            note(`the sentinels name ${sentinel.currentPrimary()} the primary`)
          },
        },
        {
          at: 0.7,
          run: async () => {
            const open = sockets.openNow()
            note(`Realtime stand-in stopped (1001 to its ${open} sockets)`, 'Realtime restart')
            await stopChild(realtime, 'SIGTERM')
            await sleep(2000)
            realtime = (await startRealtime()).proc
            note('Realtime stand-in answering again on its port')
            for (let i = 0; i < 300 && sockets.openNow() < socketCount; i++) await sleep(100)
            note(`${sockets.openNow()} of ${socketCount} sockets open again`)
          },
        },
      ]
    : []
  const faultRuns = schedule.map(
    (f) =>
      new Promise<void>((resolve, reject) =>
        setTimeout(() => {
          f.run().then(resolve, reject)
        }, totalMs * f.at),
      ),
  )

  // In chunks of at most a minute: bench/load.ts keeps every latency in memory until the end.
  const results = routes.map(() => [] as RateResult[])
  for (let done = 0; done < totalMs; done += 60_000) {
    const chunk = Math.min(60_000, totalMs - done)
    const round = await Promise.all(
      routes.map((r) =>
        constantRate({
          port,
          request: r.spec,
          rate: rate * r.share,
          durationMs: chunk,
          // Room for 100 ms answers (a loaded machine) before requests wait for a connection.
          connections: Math.max(2, Math.ceil((rate * r.share) / 10)),
          drainMs: 10_000,
          inspect: inspectFor(r),
        }),
      ),
    )
    round.forEach((r, i) => results[i]!.push(r))
    const sum = (f: (r: RateResult) => number) => round.reduce((a, r) => a + f(r), 0)
    console.log(
      `  minute ${done / 60_000 + 1}: ${sum((r) => r.completed)} of ${sum((r) => r.due)} answered, ` +
        `p99 ${Math.max(...round.map((r) => r.p99)).toFixed(1)} ms (worst route), ` +
        `connections closed by authgate ${sum((r) => r.closedByServer)}, sockets open ${sockets.openNow()} of ${socketCount}`,
    )
  }
  await Promise.all(faultRuns)
  await sockets.stop()
  const loadEndS = nowS()
  const cpuUnderLoad = cpuSeconds(pid) - cpuAtStart
  marks.push({ atS: loadEndS, label: 'load ends' })
  console.log(`load over at +${loadEndS.toFixed(0)} s; sampling the idle process for ${afterS} s`)
  await sleep(afterS * 1000 + 500)
  sampling = false
  await sampler

  // Nothing lost.
  console.log('\nper route: due, answered, unanswered; statuses; worst chunk p99, max')
  let due = 0
  let answered = 0
  let unsent = 0
  let unexpected = 0
  for (const [i, r] of routes.entries()) {
    const rs = results[i]!
    const d = rs.reduce((a, x) => a + x.due, 0)
    const c = rs.reduce((a, x) => a + x.completed, 0)
    const statuses: Record<number, number> = {}
    for (const x of rs) for (const [s, n] of Object.entries(x.statuses)) statuses[+s] = (statuses[+s] ?? 0) + n
    for (const [s, n] of Object.entries(statuses)) {
      const code = Number(s)
      if (!r.expect.includes(code) && !(r.byPolicy ?? []).includes(code) && !(code >= 502 && code <= 504))
        unexpected += n
    }
    due += d
    answered += c
    unsent += rs.reduce((a, x) => a + x.unsent, 0)
    console.log(
      `  ${r.name.padEnd(28)} ${String(d).padStart(7)} ${String(c).padStart(7)} ${String(d - c).padStart(4)}  ` +
        `${Object.entries(statuses)
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')
          .padEnd(
            24,
          )}  p99 ${Math.max(...rs.map((x) => x.p99)).toFixed(1)} ms  max ${Math.max(...rs.map((x) => x.max)).toFixed(0)} ms`,
    )
  }
  unexpected += Object.values(unshaped).reduce((a, n) => a + n, 0)
  const elapsedLoadS = loadEndS - loadStartS
  const list = (t: Record<number, number>) =>
    Object.entries(t)
      .map(([s, n]) => `${s}×${n}`)
      .join(' ') || 'none'
  console.log(
    `requests: ${due} due, ${answered} answered, ${due - answered - unsent} sent and unanswered (timed out or cut), ` +
      `${unsent} never sent (the load generator's connections all busy at the end of a minute); ` +
      `${unexpected} with a status the route does not give; ${(answered / elapsedLoadS).toFixed(0)} req/s achieved of ${rate}; ` +
      `authgate's CPU ${cpuUnderLoad.toFixed(1)} s under the load, ${((cpuUnderLoad / answered) * 1e6).toFixed(0)} µs per request answered (sockets' frames included)`,
  )
  console.log(
    `  answered 502/503/504 in authgate's error shape (a backend restarting, counted as answered): ${list(shaped)}; ` +
      `not in its shape: ${list(unshaped)}`,
  )
  const seconds = [...offSeconds.keys()].sort((a, b) => a - b)
  const windows: string[] = []
  for (let i = 0; i < seconds.length;) {
    let j = i
    let n = 0
    while (j < seconds.length && seconds[j]! - seconds[i]! === j - i) n += offSeconds.get(seconds[j++]!)!
    windows.push(`+${seconds[i]}–${seconds[j - 1]! + 1} s: ${n}`)
    i = j
  }
  console.log(
    `  let through by the rate limiter's failure policy (Redis late or failing over; open): ${byPolicy}; ` +
      `answers off the usual statuses, by window: ${windows.join(', ') || 'none'}`,
  )
  const sc = sockets.counts
  console.log(
    `sockets: ${sc.clients} clients, ${sc.opened} opened, ${sc.failedAttempts} handshakes refused while Realtime was down; ` +
      `closed by the server while running: ${list(sc.closedByServer)} (${sc.endedWithoutClose} without a close frame), ${sc.resumed} resumed; ` +
      `closed at the end: ${list(sc.closedAtEnd)}; never closed ${sc.neverClosed}; not resumed at the end ${sc.notResumed}; ` +
      `frames ${sc.framesSent} sent, ${sc.framesReceived} echoed, ${sc.framesInFlightAtClose} in flight at a close`,
  )
  const lostSockets = sc.neverClosed + sc.notResumed + Math.max(0, sc.endedWithoutClose - sc.resumed)
  console.log(
    `nothing lost: ${due - answered === 0 && unexpected === 0 && lostSockets === 0 ? 'yes' : 'NO'} ` +
      `(${due - answered - unsent} requests sent and unanswered, ${unsent} never sent, ${unexpected} unexpected, ${lostSockets} sockets ended without a close and not resumed)`,
  )
  if (faultLog.length > 0) console.log(`faults:\n${faultLog.join('\n')}`)

  // Memory.
  const v = memoryVerdicts(samples, loadEndS)
  const mb = (n: number | undefined) => (n === undefined ? 'n/a' : `${n.toFixed(1)} MB`)
  console.log(
    `\nmemory (RSS): idle before the load ${mb(v.idleRssMb)}; max ${mb(v.maxRssMb)} at +${v.maxRssAtS.toFixed(0)} s ` +
      `(budget ${ISSUE_BUDGET.maxRssMb} MB: ${v.withinMax ? 'within' : 'OVER'}); at the end of the load ${mb(v.endOfLoadRssMb)}; ` +
      `${ISSUE_BUDGET.afterS} s after it ${mb(v.afterRssMb)} (${v.afterRssMb === undefined ? 'not sampled' : `${(v.afterRssMb - v.idleRssMb).toFixed(1)} MB over idle: ${v.returned ? 'back within' : 'NOT back within'} ${ISSUE_BUDGET.returnMb} MB`}); ` +
      `last sample +${(v.lastAtS - loadEndS).toFixed(0)} s after it ${mb(v.lastRssMb)} (${(v.lastRssMb - v.idleRssMb).toFixed(1)} MB over idle)`,
  )
  const last = samples[samples.length - 1]!
  console.log(
    `heap used: idle ${samples[0]!.heapMb.toFixed(1)} MB, max ${Math.max(...samples.map((s) => s.heapMb)).toFixed(1)} MB, last ${last.heapMb.toFixed(1)} MB; ` +
      `fds: idle ${samples[0]!.fds}, max ${Math.max(...samples.map((s) => s.fds))}, last ${last.fds}; ` +
      `event-loop delay p99 per interval under load: median ${median(samples.filter((s) => s.atS > loadStartS && s.atS <= loadEndS).map((s) => s.loopP99Ms)).toFixed(1)} ms`,
  )
  if (values.plot !== undefined) {
    const jsonPath = values.plot.replace(/\.svg$/, '') + '.json'
    const description = {
      command: `npm run soak -- ${process.argv.slice(2).join(' ')}`,
      rate,
      minutes,
      sockets: socketCount,
      loadStartS,
      loadEndS,
      marks,
      verdicts: v,
      samples,
    }
    writeFileSync(jsonPath, JSON.stringify(description, null, 2) + '\n')
    writeFileSync(
      values.plot,
      memoryPlotSvg(samples, marks, {
        title: `authgate memory, ${minutes} min soak at ${rate} req/s + ${socketCount} sockets, faults ${faults ? 'on' : 'off'}, then idle${values['node-options'] ? ` (${values['node-options']})` : ''}`,
        budgetMb: ISSUE_BUDGET.maxRssMb,
      }),
    )
    console.log(`samples: ${jsonPath}; plot: ${values.plot}`)
  }

  await stopChild(gateway.proc, 'SIGTERM')
  for (const proc of running) proc.kill('SIGKILL')
  await sentinel.stop()
  process.exit(0)
}

function median(list: number[]): number {
  const s = [...list].sort((a, b) => a - b)
  return s.length ? s[Math.floor(s.length / 2)]! : NaN
}

if (values.role === 'backend') await runBackend()
else if (values.role === 'services') runServices()
else if (values.role === 'realtime') await runRealtime()
else await runDriver()
