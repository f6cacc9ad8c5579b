/**
 * Soak run: authgate under a constant mixed load for minutes, watched from outside for growth.
 *
 *   npm run soak                       # 1 minute
 *   npm run soak -- --minutes 10 [--rate 2000] [--sample 10]
 *
 * Three processes, so that each figure is the gateway's alone:
 * - a fake Supabase Auth (answers every forwarded request with a small JSON, serves the key set);
 * - authgate (`buildApp` configured through the service's own settings, token verification on, a
 *   protected application route), started with `--role gateway`;
 * - this one: the load (open loop, bench/load.ts) and the sampling.
 *
 * Load per second (scaled with --rate): 30 % `GET /auth/settings` and 10 % `POST /auth/token`
 * forwarded to the backend, 20 % `POST /auth/otp` from one client over its limit (429), 5 % each
 * `GET /openapi.json` and `GET /docs`, 30 % `GET /soak/me` with a verified access token.
 *
 * Sampled every --sample seconds from outside the gateway: RSS and open file descriptors from
 * /proc/<pid>, heap used and event-loop delay p99 (over the interval) from its Prometheus metrics.
 * Growth is flagged when the end exceeds the state after warm-up (the first fifth of the run, at
 * least 20 s) by more than warm-up explains: RSS or heap +25 % and +16 MB, descriptors +32.
 * Never pass/fail: it prints figures and flags, and exits 0.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import { readdirSync, readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose'
import { constantRate, type RateResult, type RequestSpec } from './load.ts'

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'driver' },
    minutes: { type: 'string', default: '1' },
    rate: { type: 'string', default: '2000' },
    sample: { type: 'string', default: '10' },
  },
})

const ISSUER = 'http://127.0.0.1/auth'

if (values.role === 'backend') await runBackend()
else if (values.role === 'gateway') await runGateway()
else await runDriver()

/** The fake Supabase Auth: the key set, and a small JSON for everything else. */
async function runBackend(): Promise<void> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
  const kid = 'soak'
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }] })
  const body = '{"external":{"email":true},"disable_signup":false,"mailer_autoconfirm":false}'
  const server = createServer((req, res) => {
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const privateJwk = await exportJWK(privateKey)
  process.stdout.write(JSON.stringify({ port: (server.address() as AddressInfo).port, privateJwk, kid }) + '\n')
}

/** authgate, configured from the environment the driver gives it, plus one protected route. */
async function runGateway(): Promise<void> {
  const { buildApp } = await import('../src/app.ts')
  const { loadServiceSettings } = await import('../src/settings.ts')
  const { defineRoute } = await import('../src/routes-dsl/index.ts')
  const settings = loadServiceSettings(process.env)
  const app = await buildApp({
    config: settings.core,
    rateLimit: settings.rateLimit,
    openapi: settings.openapi,
    processMetrics: true,
    protect: { issuer: ISSUER, jwksUrl: new URL('/.well-known/jwks.json', settings.core.backendUrl.href) },
  })
  app.route(
    defineRoute({
      method: 'GET',
      url: '/soak/me',
      auth: 'required',
      handler: async (request) => ({ id: request.user?.sub ?? null }),
    }),
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)))
  process.stdout.write(JSON.stringify({ port: (app.server.address() as AddressInfo).port }) + '\n')
}

function child(role: string, env: Record<string, string> = {}): Promise<{ proc: ChildProcess; info: unknown }> {
  const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), '--role', role], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  process.once('exit', () => proc.kill('SIGKILL'))
  return new Promise((resolve, reject) => {
    let out = ''
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8')
      const nl = out.indexOf('\n')
      if (nl >= 0) resolve({ proc, info: JSON.parse(out.slice(0, nl)) })
    })
    proc.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)))
  })
}

interface Sample {
  atS: number
  rssMb: number
  heapMb: number
  /** V8's reserved heap and memory outside it (buffers): where an RSS step comes from. */
  heapTotalMb: number
  externalMb: number
  fds: number
  loopP99Ms: number
}

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)
  return m ? Number(m[1]) : NaN
}

async function sample(pid: number, port: number, startedAt: number): Promise<Sample> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN)
  const fds = readdirSync(`/proc/${pid}/fd`).length
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  return {
    atS: (performance.now() - startedAt) / 1000,
    rssMb: rssKb / 1024,
    heapMb: metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
    heapTotalMb: metric(text, 'nodejs_heap_size_total_bytes') / 2 ** 20,
    externalMb: metric(text, 'nodejs_external_memory_bytes') / 2 ** 20,
    fds,
    loopP99Ms: metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
  }
}

async function runDriver(): Promise<void> {
  const minutes = Number(values.minutes)
  const rate = Number(values.rate)
  const sampleS = Number(values.sample)
  if (!(minutes > 0) || !(rate > 0) || !(sampleS > 0)) throw new Error('--minutes, --rate and --sample must be > 0')
  const backend = await child('backend')
  const { port: backendPort, privateJwk, kid } = backend.info as { port: number; privateJwk: JWK; kid: string }
  const gateway = await child('gateway', {
    AUTHGATE_BACKEND_URL: `http://127.0.0.1:${backendPort}`,
    AUTHGATE_LOG_LEVEL: 'warn',
    AUTHGATE_CACHE_TTL: 'off',
    AUTHGATE_RATE_LIMITED_ROUTES: 'POST /otp',
    // One more request every 2.4 h: over any run, the limited route answers 429 throughout.
    AUTHGATE_RATE_LIMIT: '10/1d',
  })
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
    .sign(await importJWK(privateJwk, 'ES256'))
  const json = { 'content-type': 'application/json' }
  const mix: Array<{ share: number; spec: RequestSpec; expect: number }> = [
    { share: 0.3, spec: { method: 'GET', path: '/auth/settings' }, expect: 200 },
    {
      share: 0.1,
      spec: {
        method: 'POST',
        path: '/auth/token?grant_type=password',
        headers: json,
        body: '{"email":"a@example.com","password":"secret123"}',
      },
      expect: 200,
    },
    {
      share: 0.2,
      spec: { method: 'POST', path: '/auth/otp', headers: json, body: '{"email":"a@example.com"}' },
      expect: 429,
    },
    { share: 0.05, spec: { method: 'GET', path: '/openapi.json' }, expect: 200 },
    { share: 0.05, spec: { method: 'GET', path: '/docs' }, expect: 200 },
    {
      share: 0.3,
      spec: { method: 'GET', path: '/soak/me', headers: { authorization: `Bearer ${token}` } },
      expect: 200,
    },
  ]
  // Every route must answer as expected before the clock starts, or the figures mean nothing; the
  // limited route is called until its budget is spent.
  for (const m of mix) {
    for (let i = 0; ; i++) {
      const res = await fetch(`http://127.0.0.1:${port}${m.spec.path}`, {
        method: m.spec.method,
        headers: m.spec.headers ?? {},
        ...(m.spec.body !== undefined ? { body: m.spec.body } : {}),
      })
      await res.arrayBuffer()
      if (res.status === m.expect) break
      if (res.status !== 200 || i > 100) throw new Error(`${m.spec.method} ${m.spec.path} answered ${res.status}`)
    }
  }

  console.log(
    `soak: ${rate} req/s for ${minutes} min against authgate pid ${pid} (port ${port}); sampling every ${sampleS} s`,
  )
  const startedAt = performance.now()
  const samples: Sample[] = [await sample(pid, port, startedAt)]
  const print = (s: Sample) =>
    console.log(
      `  +${s.atS.toFixed(0).padStart(4)} s  RSS ${s.rssMb.toFixed(1)} MB  heap ${s.heapMb.toFixed(1)} of ${s.heapTotalMb.toFixed(1)} MB  external ${s.externalMb.toFixed(1)} MB  fds ${s.fds}  loop p99 ${s.loopP99Ms.toFixed(1)} ms`,
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

  // In chunks of at most a minute: bench/load.ts keeps every latency in memory until the end.
  const totalMs = minutes * 60_000
  const results = mix.map(() => [] as RateResult[])
  for (let done = 0; done < totalMs; done += 60_000) {
    const chunk = Math.min(60_000, totalMs - done)
    const round = await Promise.all(
      mix.map((m) =>
        constantRate({
          port,
          request: m.spec,
          rate: rate * m.share,
          durationMs: chunk,
          connections: Math.max(2, Math.ceil((rate * m.share) / 50)),
          drainMs: 10_000,
        }),
      ),
    )
    round.forEach((r, i) => results[i]!.push(r))
    const sum = (f: (r: RateResult) => number) => round.reduce((a, r) => a + f(r), 0)
    const wrong = round.reduce((a, r, i) => a + r.errors + r.completed - (r.statuses[mix[i]!.expect] ?? 0), 0)
    console.log(
      `  minute ${done / 60_000 + 1}: ${sum((r) => r.completed)} of ${sum((r) => r.due)} answered, ${wrong} unexpected, ` +
        `p99 ${Math.max(...round.map((r) => r.p99)).toFixed(1)} ms (worst route), ` +
        `connections closed by authgate ${sum((r) => r.closedByServer)}, answers to nothing sent ${sum((r) => r.unsolicited)}`,
    )
  }
  // The load's own duration (the sampler may still be sleeping).
  const elapsedS = (performance.now() - startedAt) / 1000
  sampling = false
  await sampler
  const idle = await sample(pid, port, startedAt)
  console.log('after the load:')
  print(idle)

  console.log('\nper route (due, answered, unexpected status or error, worst chunk p99, max):')
  let due = 0
  let answered = 0
  let unexpected = 0
  for (const [i, m] of mix.entries()) {
    const rs = results[i]!
    const d = rs.reduce((a, r) => a + r.due, 0)
    const c = rs.reduce((a, r) => a + r.completed, 0)
    const wrong = rs.reduce((a, r) => a + r.errors + r.completed - (r.statuses[m.expect] ?? 0), 0)
    due += d
    answered += c
    unexpected += wrong
    console.log(
      `  ${`${m.spec.method} ${m.spec.path.split('?')[0]}`.padEnd(20)} ${String(d).padStart(8)} ${String(c).padStart(8)} ${String(wrong).padStart(6)}  p99 ${Math.max(...rs.map((r) => r.p99)).toFixed(1)} ms  max ${Math.max(...rs.map((r) => r.max)).toFixed(0)} ms`,
    )
  }
  console.log(
    `total: ${due} due, ${answered} answered (${(answered / elapsedS).toFixed(0)} req/s achieved of ${rate}), ${unexpected} unexpected`,
  )

  // Warm-up: the first fifth of the run, at least 20 s. The GC's sawtooth is taken out by comparing
  // the lowest of the last three samples of each side.
  const warmS = Math.max(20, elapsedS / 5)
  const afterWarm = samples.filter((s) => s.atS >= warmS)
  const low = (list: Sample[], key: keyof Sample) => Math.min(...list.map((s) => s[key]))
  const warm = afterWarm.slice(0, 3)
  const end = samples.slice(-3)
  // Samples under load only (the first one is taken before it starts).
  const loop = samples.slice(1).map((s) => s.loopP99Ms)
  console.log(
    `\nstart: RSS ${samples[0]!.rssMb.toFixed(1)} MB, heap ${samples[0]!.heapMb.toFixed(1)} MB, fds ${samples[0]!.fds}; ` +
      `after the load: RSS ${idle.rssMb.toFixed(1)} MB, heap ${idle.heapMb.toFixed(1)} MB, fds ${idle.fds}`,
  )
  // A leak keeps growing; a one-time step (the heap's spaces sized up once) does not: the second
  // half of the run is compared on its own as well.
  const half = samples.filter((s) => s.atS >= elapsedS / 2).slice(0, 3)
  if (warm.length === 0) {
    console.log('run too short to tell warm-up from growth')
  } else {
    const grewMb = (a: number, b: number) => b > a * 1.25 && b > a + 16
    const grewFds = (a: number, b: number) => b > a + 32
    const rows = [
      ['RSS MB', 'rssMb', grewMb],
      ['heap MB', 'heapMb', grewMb],
      ['fds', 'fds', grewFds],
    ] as const
    for (const [name, key, grew] of rows) {
      const a = low(warm, key)
      const m = low(half, key)
      const b = low(end, key)
      console.log(
        `${name.padEnd(8)} after warm-up (+${warm[0]!.atS.toFixed(0)} s) ${a.toFixed(1)}, at half-time (+${half[0]!.atS.toFixed(0)} s) ${m.toFixed(1)}, at the end ${b.toFixed(1)}` +
          `${grew(a, b) ? '  <-- GROWTH beyond warm-up' : ''}${grew(m, b) ? '  <-- GROWTH over the second half' : ''}`,
      )
    }
  }
  console.log(
    `event-loop delay p99 per ${sampleS} s interval: median ${median(loop).toFixed(1)} ms, worst ${Math.max(...loop).toFixed(1)} ms`,
  )

  gateway.proc.kill('SIGTERM')
  backend.proc.kill('SIGKILL')
  await sleep(500)
  process.exit(0)
}

function median(list: number[]): number {
  const s = [...list].sort((a, b) => a - b)
  return s.length ? s[Math.floor(s.length / 2)]! : NaN
}
