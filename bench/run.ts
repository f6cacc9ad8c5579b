/**
 * `npm run bench`: authgate against the gateways people would pick instead, in one run, one table,
 * written to BENCHMARKS.md (between the bench markers) with the machine, versions and command.
 *
 *   node bench/run.ts [--duration 3] [--rounds 2] [--rate 5000|half] [--connections 64]
 *                     [--only a,b,...] [--peers authgate,nginx,...] [--baseline <git ref>]
 *                     [--idle-connections 5000] [--port-offset 0] [--no-write]
 *
 * Every peer runs as its own process on 127.0.0.1 in front of the same fake backend (nginx answering
 * canned bodies). Rounds are interleaved (peer A, B, C, then again) because the machine is shared and
 * noisy: compare ratios within one run, not figures across runs. Measures, never judges: nothing
 * here fails. Needs nginx, haproxy, caddy and wrk (Debian packages); a missing one drops its rows.
 *
 * `--rate half`: each case's latency rounds run at half of authgate's own maximum in that case (the
 * median of its wrk rounds, which then all run first), so the p99 is the tail below saturation
 * whatever the machine's speed. `--baseline <ref>` builds that commit's `dist` beside this one.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, release, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { allocatorLabel } from './allocator.ts'
import { constantRate, idleConnections, type RequestSpec } from './load.ts'
import { benchToken } from './peers/authgate-protected.ts'
import { OBJECT_BYTES } from './peers/stand-ins.ts'
import {
  SERVICE_ARGS,
  authgateEnv,
  benchCases,
  buildBaseline,
  floorArgs,
  FLOORS,
  FRAMEWORK_FLOOR,
  OBJECT_MB,
  pathOn,
  render,
  restEnv,
  ROOT,
  RUNTIME_FLOOR,
  SOCKET_PATH,
  socketHeaders,
  socketsEnv,
  UNLIMITED,
  waitForPort,
  type Case,
} from './setup.ts'
import { socketMessages } from './socket-load.ts'

const { values: opts } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
    rate: { type: 'string', default: '5000' },
    connections: { type: 'string', default: '64' },
    only: { type: 'string' },
    peers: { type: 'string' },
    baseline: { type: 'string' },
    'idle-connections': { type: 'string', default: '5000' },
    workers: { type: 'string', default: '2' },
    'no-write': { type: 'boolean', default: false },
    'port-offset': { type: 'string', default: '0' },
    warmup: { type: 'string', default: '2' },
  },
})
const DURATION = Number(opts.duration)
const ROUNDS = Number(opts.rounds)
// Seconds of unmeasured load each peer gets in each case before its rounds: a Node.js peer runs its
// first few thousand requests unoptimised, and authgate, with more code to tier up than the floors,
// was measured cold in its first round (0.4–0.6 × its warm rate) and so in the median of three.
const WARMUP = Number(opts.warmup)
const HALF_RATE = opts.rate === 'half'
const RATE = HALF_RATE ? NaN : Number(opts.rate)
const CONNECTIONS = Number(opts.connections)
const IDLE = Number(opts['idle-connections'])
const WORKERS = Number(opts.workers)
const ONLY = opts.only?.split(',').map((s) => s.trim())
const PEER_FILTER = opts.peers?.split(',').map((s) => s.trim())

const DIR = mkdtempSync(join(tmpdir(), 'authgate-bench-'))
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim()) || 100
const have = (bin: string) => spawnSync('which', [bin]).status === 0

if (!have('wrk')) {
  console.error('wrk is required (apt-get install -y wrk)')
  process.exit(1)
}

const BASE_PORTS = {
  backend: 19501,
  nginx: 19502,
  nginxLimited: 19503,
  nginx2: 19504,
  nginx2Limited: 19505,
  haproxy: 19506,
  haproxyLimited: 19507,
  caddy: 19508,
  authgate: 19510,
  authgateMemory: 19511,
  authgateRedis: 19512,
  authgateCluster: 19513,
  authgateClusterMemory: 19514,
  baseline: 19515,
  baselineMemory: 19516,
  nodeFloor: 19517,
  nodeFloorLimited: 19518,
  fastifyFloor: 19522,
  fastifyFloorLimited: 19523,
  answerFloor: 19524,
  answerFloorLimited: 19525,
  protect: 19520,
  protectNoCache: 19521,
  standInRealtime: 19530,
  standInStorage: 19531,
  nodeFloorSocket: 19532,
  authgateSockets: 19533,
  baselineSockets: 19534,
}
// Moved by --port-offset, so that a second run on the same machine does not answer the first one's requests.
const PORTS = Object.fromEntries(
  Object.entries(BASE_PORTS).map(([name, port]) => [name, port + Number(opts['port-offset'])]),
) as typeof BASE_PORTS

// --- processes ---------------------------------------------------------------------------------

const children: ChildProcess[] = []
// Each Node.js peer counts its CPU and heap allocation between two SIGUSR2 (bench/peers/meter.ts);
// cluster workers inherit the flag. Read per case around each measured run.
const METER_DIR = join(DIR, 'meter')
mkdirSync(METER_DIR)
const METERED = ['--import', join(ROOT, 'bench/peers/meter.ts')]
function start(cmd: string, args: string[], env: Record<string, string> = {}, cwd = ROOT): ChildProcess {
  const metered = cmd === process.execPath ? { BENCH_METER_DIR: METER_DIR } : {}
  const child = spawn(cmd, cmd === process.execPath ? [...METERED, ...args] : args, {
    cwd,
    env: { ...process.env, ...metered, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let err = ''
  child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-2000)))
  child.on('exit', (code, signal) => {
    if (!stopping && code !== 0) console.error(`${cmd} ${args.join(' ')} exited (${code ?? signal}): ${err}`)
  })
  children.push(child)
  return child
}
let stopping = false
function stopAll() {
  stopping = true
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM')
}
process.on('SIGINT', () => {
  stopAll()
  process.exit(130)
})
// A run that fails (a baseline that does not build, say) leaves no peers behind on the bench's ports.
process.on('exit', () => {
  if (!stopping) stopAll()
})
// However long the run, the harness ends: a generous bound from the options.
const HARD_LIMIT_MS = 600_000 + (ROUNDS * DURATION + WARMUP) * 2 * 1000 * 60
setTimeout(() => {
  console.error('bench: hard time limit reached, stopping')
  stopAll()
  process.exit(3)
}, HARD_LIMIT_MS).unref()

/** The pid and its descendants (nginx master + workers, node primary + cluster workers). */
function tree(pid: number): number[] {
  const out = [pid]
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const kids = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim()
      if (kids) for (const k of kids.split(/\s+/)) out.push(...tree(Number(k)))
    }
  } catch {
    // gone
  }
  return out
}
function cpuMs(pid: number): number {
  let ticks = 0
  for (const p of tree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12]) // utime, stime (fields 14, 15 of the line)
    } catch {
      // gone
    }
  }
  return (ticks * 1000) / CLK_TCK
}
/** The Node.js processes of a peer (itself, its cluster workers). */
function nodePids(pid: number): number[] {
  return tree(pid).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[0] === process.execPath
    } catch {
      return false
    }
  })
}
interface Metered {
  heapAllocated: number
  cpuUs: number
}
/** Toggles the meter of each Node.js process of the peer and waits for each one's file to say so. */
async function toggleMeter(pid: number, counting: boolean): Promise<Metered | undefined> {
  const pids = nodePids(pid)
  if (pids.length === 0) return undefined
  for (const p of pids) {
    rmSync(join(METER_DIR, `${p}.json`), { force: true })
    process.kill(p, 'SIGUSR2')
  }
  const total: Metered = { heapAllocated: 0, cpuUs: 0 }
  for (const p of pids) {
    const file = join(METER_DIR, `${p}.json`)
    const until = Date.now() + 5000
    let read: { counting: boolean; heapAllocated?: number; cpuUserUs?: number; cpuSystemUs?: number } | undefined
    while (Date.now() < until) {
      try {
        read = JSON.parse(readFileSync(file, 'utf8'))
        if (read?.counting === counting) break
      } catch {
        // not written yet
      }
      await sleep(20)
    }
    if (read?.counting !== counting) return undefined
    total.heapAllocated += read.heapAllocated ?? 0
    total.cpuUs += (read.cpuUserUs ?? 0) + (read.cpuSystemUs ?? 0)
  }
  return total
}
function rssMb(pid: number): number {
  let kb = 0
  for (const p of tree(pid)) {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0)
    } catch {
      // gone
    }
  }
  return kb / 1024
}

// --- peers -------------------------------------------------------------------------------------

interface Peer {
  name: string
  port: number
  /** Port of the same peer configured with a per-client limit (the 429 path), if it has one. */
  limitedPort?: number
  /** The backend itself: paths without the /auth prefix. */
  direct?: boolean
  /** Left out of the memory table (the floor runs from TypeScript sources, whose stripping costs memory). */
  noMemory?: boolean
  /** Measured on the 429 case only (the answer floor: elsewhere it is the runtime floor again). */
  limitedOnly?: boolean
  /** Serves the application routes of bench/peers/authgate-protected.ts (cases f, g). */
  protect?: boolean
  /** Relays Storage's objects (the Storage cases). */
  storage?: boolean
  /** Port where Realtime's socket is relayed (the Realtime case), and its path there. */
  socketPort?: number
  socketPath?: string
  /** Node.js: metered for CPU and heap allocation (bench/peers/meter.ts). */
  metered?: boolean
  pid: () => number | undefined
  group: 'single' | 'all-cores' | 'limit'
}
const peers: Peer[] = []
const want = (name: string) => !PEER_FILTER || PEER_FILTER.some((f) => name.startsWith(f))

writeFileSync(join(DIR, 'backend.conf'), render('backend.nginx.conf', { DIR, BACKEND_PORT: PORTS.backend }))
if (!have('nginx')) {
  console.error('nginx is required for the fake backend (apt-get install -y nginx)')
  process.exit(1)
}
const backendProc = start('nginx', ['-c', join(DIR, 'backend.conf'), '-g', 'daemon off;'])
peers.push({
  name: 'backend direct',
  port: PORTS.backend,
  direct: true,
  pid: () => backendProc.pid,
  group: 'limit',
})
// Realtime's and Storage's stand-ins (what nginx cannot play), and the socket case's ceiling.
const standIns = start(process.execPath, [
  join(ROOT, 'bench/peers/stand-ins.ts'),
  String(PORTS.standInRealtime),
  String(PORTS.standInStorage),
])
peers.push({
  name: 'stand-in Realtime direct',
  port: -1,
  socketPort: PORTS.standInRealtime,
  socketPath: '/socket/websocket',
  pid: () => standIns.pid,
  group: 'limit',
  noMemory: true,
})

// The compiled service, as the container and the npm package run it (the sources run directly only
// in a checkout; type stripping costs start-up time and about 30 MB of memory, nothing per request).
// An earlier commit (--baseline) is built the same way.
execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' })
function authgate(port: number, env: Record<string, string>, cwd = ROOT): ChildProcess {
  return start(process.execPath, SERVICE_ARGS, { ...authgateEnv(port, PORTS.backend), ...env }, cwd)
}
const unlimited = UNLIMITED
const rest = restEnv(PORTS.backend, PORTS.standInStorage)
const sockets = socketsEnv(PORTS.standInRealtime)
const limitedRedis = {
  AUTHGATE_REDIS_URL: 'redis://127.0.0.1:6379',
  AUTHGATE_REDIS_KEY_PREFIX: `bench:${process.pid}:`,
}

const FLOOR_PORTS = {
  node: { port: PORTS.nodeFloor, limited: PORTS.nodeFloorLimited },
  fastify: { port: PORTS.fastifyFloor, limited: PORTS.fastifyFloorLimited },
  answer: { port: PORTS.answerFloor, limited: PORTS.answerFloorLimited },
}
// The answer floor only when asked for by name (--peers ...,answer): it is no floor a case is judged by.
for (const floor of FLOORS.filter((f) => (f.want === 'answer' ? PEER_FILTER?.includes('answer') : want(f.want)))) {
  // The runtime floor relays Storage's objects too, and Realtime's socket as bytes over TCP.
  const runtime = floor.want === 'node'
  const { port, limited } = FLOOR_PORTS[floor.want]
  const f = start(
    process.execPath,
    floorArgs(floor, {
      port,
      limited,
      backend: PORTS.backend,
      storage: PORTS.standInStorage,
      socket: PORTS.nodeFloorSocket,
      realtime: PORTS.standInRealtime,
    }),
  )
  peers.push({
    name: floor.name,
    port,
    limitedPort: limited,
    pid: () => f.pid,
    group: 'limit',
    noMemory: true,
    metered: true,
    ...(floor.want === 'answer' ? { limitedOnly: true } : {}),
    ...(runtime ? { storage: true, socketPort: PORTS.nodeFloorSocket, socketPath: '/socket/websocket' } : {}),
  })
}
if (want('authgate')) {
  // With the REST service mounted (case e): PostgREST is the fake backend too; Storage a stand-in.
  const a = authgate(PORTS.authgate, { ...unlimited, ...rest })
  const m = authgate(PORTS.authgateMemory, {})
  const ws = authgate(PORTS.authgateSockets, sockets)
  peers.push({
    name: 'authgate',
    port: PORTS.authgate,
    pid: () => a.pid,
    group: 'single',
    metered: true,
    storage: true,
  })
  peers.push({
    name: 'authgate (memory store)',
    port: -1,
    limitedPort: PORTS.authgateMemory,
    pid: () => m.pid,
    group: 'single',
    metered: true,
  })
  peers.push({
    name: 'authgate (cookie sessions)',
    port: -1,
    socketPort: PORTS.authgateSockets,
    socketPath: SOCKET_PATH,
    pid: () => ws.pid,
    group: 'single',
    metered: true,
  })
  const redisUp = spawnSync('redis-cli', ['-h', '127.0.0.1', 'ping']).stdout?.toString().trim() === 'PONG'
  if (redisUp || !have('redis-cli')) {
    const r = authgate(PORTS.authgateRedis, limitedRedis)
    peers.push({
      name: 'authgate (Redis store)',
      port: -1,
      limitedPort: PORTS.authgateRedis,
      pid: () => r.pid,
      group: 'single',
      metered: true,
    })
  }
  if (WORKERS > 1) {
    const c = authgate(PORTS.authgateCluster, { ...unlimited, ...rest, AUTHGATE_WORKERS: String(WORKERS) })
    const cm = authgate(PORTS.authgateClusterMemory, { AUTHGATE_WORKERS: String(WORKERS) })
    peers.push({
      name: `authgate ×${WORKERS} workers`,
      port: PORTS.authgateCluster,
      pid: () => c.pid,
      group: 'all-cores',
      metered: true,
      storage: true,
    })
    peers.push({
      name: `authgate ×${WORKERS} (shared store)`,
      port: -1,
      limitedPort: PORTS.authgateClusterMemory,
      pid: () => cm.pid,
      group: 'all-cores',
      metered: true,
    })
  }
}
const { publicJwk, token: BENCH_TOKEN } = await benchToken()
if (want('authgate')) {
  // Application routes behind the protect plugin, with the verified-token cache and without it.
  for (const [name, port, extra] of [
    ['authgate (protect)', PORTS.protect, []],
    ['authgate (protect, no token cache)', PORTS.protectNoCache, ['--no-token-cache']],
  ] as const) {
    const p = start(process.execPath, [
      join(ROOT, 'bench/peers/authgate-protected.ts'),
      String(port),
      JSON.stringify(publicJwk),
      ...extra,
    ])
    peers.push({ name, port, pid: () => p.pid, group: 'single', noMemory: true, protect: true, metered: true })
  }
}
if (opts.baseline && want('authgate')) {
  // The same service at another commit, for before/after in one run.
  const dir = join(DIR, 'baseline')
  mkdirSync(dir)
  const forward = buildBaseline(opts.baseline, dir)
  const b = authgate(PORTS.baseline, { ...forward, ...rest }, dir)
  const bm = authgate(PORTS.baselineMemory, {}, dir)
  const bs = authgate(PORTS.baselineSockets, sockets, dir)
  peers.push({
    name: `authgate @${opts.baseline}`,
    port: PORTS.baseline,
    pid: () => b.pid,
    group: 'single',
    metered: true,
    storage: true,
  })
  peers.push({
    name: `authgate @${opts.baseline} (memory)`,
    port: -1,
    limitedPort: PORTS.baselineMemory,
    pid: () => bm.pid,
    group: 'single',
    metered: true,
  })
  peers.push({
    name: `authgate @${opts.baseline} (cookie sessions)`,
    port: -1,
    socketPort: PORTS.baselineSockets,
    socketPath: SOCKET_PATH,
    pid: () => bs.pid,
    group: 'single',
    metered: true,
  })
}
if (have('nginx') && want('nginx')) {
  const setups: [number, number, number][] = [[1, PORTS.nginx, PORTS.nginxLimited]]
  if (WORKERS > 1) setups.push([WORKERS, PORTS.nginx2, PORTS.nginx2Limited])
  for (const [workers, port, limitedPort] of setups) {
    const conf = join(DIR, `nginx${workers}.conf`)
    writeFileSync(
      conf,
      render('nginx.conf', {
        DIR,
        WORKERS: workers,
        PORT: port,
        LIMITED_PORT: limitedPort,
        BACKEND_PORT: PORTS.backend,
      }),
    )
    const p = start('nginx', ['-c', conf, '-g', 'daemon off;'])
    peers.push({
      name: workers === 1 ? 'nginx' : `nginx ×${workers} workers`,
      port,
      limitedPort,
      pid: () => p.pid,
      group: workers === 1 ? 'single' : 'all-cores',
    })
  }
}
if (have('haproxy') && want('haproxy')) {
  const conf = join(DIR, 'haproxy.cfg')
  writeFileSync(
    conf,
    render('haproxy.cfg', {
      DIR,
      PORT: PORTS.haproxy,
      LIMITED_PORT: PORTS.haproxyLimited,
      BACKEND_PORT: PORTS.backend,
    }),
  )
  const p = start('haproxy', ['-f', conf, '-db'])
  peers.push({
    name: 'HAProxy',
    port: PORTS.haproxy,
    limitedPort: PORTS.haproxyLimited,
    pid: () => p.pid,
    group: 'single',
  })
}
if (have('caddy') && want('caddy')) {
  const conf = join(DIR, 'Caddyfile')
  writeFileSync(conf, render('Caddyfile', { PORT: PORTS.caddy, BACKEND_PORT: PORTS.backend }))
  const p = start('caddy', ['run', '--config', conf, '--adapter', 'caddyfile'], {
    GOMAXPROCS: '1',
    XDG_DATA_HOME: DIR,
    XDG_CONFIG_HOME: DIR,
  })
  peers.push({ name: 'Caddy', port: PORTS.caddy, pid: () => p.pid, group: 'single' })
}

for (const p of peers) {
  for (const port of [p.port, p.limitedPort, p.socketPort]) {
    if (port === undefined || port < 0) continue
    if (!(await waitForPort(port))) console.error(`${p.name} did not listen on ${port}`)
  }
}
await sleep(500)

// --- cases -------------------------------------------------------------------------------------

const UPLOAD = join(DIR, 'upload.bin')
writeFileSync(UPLOAD, Buffer.alloc(OBJECT_BYTES, 'upload '))
const CASES: Case[] = benchCases({ uploadFile: UPLOAD, benchToken: BENCH_TOKEN })

function portFor(peer: Peer, c: Case): number | undefined {
  if (c.socket) return peer.socketPort
  if (peer.limitedOnly && !c.limited) return undefined
  if (c.storageOnly && !peer.storage) return undefined
  if (Boolean(c.protectOnly) !== Boolean(peer.protect)) return undefined
  if (c.authgateOnly && !peer.name.startsWith('authgate')) return undefined
  if (c.limited) return peer.limitedPort
  return peer.port >= 0 ? peer.port : undefined
}
function pathFor(peer: Peer, c: Case): string {
  return pathOn(c, {
    ...(peer.direct ? { direct: true } : {}),
    ...(peer.socketPath ? { socketPath: peer.socketPath } : {}),
  })
}

async function oneRequest(port: number, spec: RequestSpec): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}${spec.path}`, {
    method: spec.method,
    redirect: 'manual',
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(spec.body !== undefined ? { body: spec.body } : {}),
    ...(spec.bodyFile !== undefined ? { body: readFileSync(spec.bodyFile) } : {}),
  })
  await res.arrayBuffer()
  return res.status
}

interface Wrk {
  rps: number
  requests: number
  /** Answers that were not 2xx or 3xx. */
  other: number
}
function wrk(port: number, spec: RequestSpec, seconds = DURATION, connections = CONNECTIONS): Promise<Wrk | undefined> {
  const script = join(DIR, `wrk-${spec.method}-${Buffer.from(spec.path).toString('hex').slice(0, 40)}.lua`)
  if (!existsSync(script)) {
    let lua = `wrk.method = "${spec.method}"\n`
    if (spec.body !== undefined) lua += `wrk.body = '${spec.body}'\n`
    if (spec.bodyFile !== undefined)
      lua += `local f = io.open("${spec.bodyFile}", "rb")\nwrk.body = f:read("*a")\nf:close()\n`
    for (const [k, v] of Object.entries(spec.headers ?? {})) lua += `wrk.headers["${k}"] = "${v}"\n`
    writeFileSync(script, lua)
  }
  return new Promise((resolve) => {
    const child = spawn('wrk', [
      '-t1',
      `-c${connections}`,
      `-d${seconds}s`,
      '-s',
      script,
      `http://127.0.0.1:${port}${spec.path}`,
    ])
    let out = ''
    child.stdout.on('data', (c: Buffer) => (out += c))
    child.on('exit', () => {
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
      const requests = Number(/(\d+) requests in/.exec(out)?.[1])
      const other = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
      resolve(rps ? { rps, requests, other } : undefined)
    })
  })
}

interface Cell {
  /** Requests (or socket messages) per second. */
  rps: number[]
  /** CPU of the peer's processes per request (or message), from /proc: any process. */
  cpuUsPerRequest: number[]
  /** V8 heap bytes allocated per request (or message), Node.js peers (bench/peers/meter.ts). */
  heapBytesPerRequest: number[]
  /** RSS of the peer's processes once the case's rounds are over. */
  rssAfter?: number
  p50: number[]
  p99: number[]
  latencyErrors: number
  wrongStatus?: string
}
const results = new Map<string, Cell>() // `${case.id}|${peer.name}`
const cellFor = (c: Case, p: Peer) => {
  const key = `${c.id}|${p.name}`
  let cell = results.get(key)
  if (!cell)
    results.set(
      key,
      (cell = { rps: [], cpuUsPerRequest: [], heapBytesPerRequest: [], p50: [], p99: [], latencyErrors: 0 }),
    )
  return cell
}

const memory = new Map<string, { idle: number; loaded?: number; idleConns?: number; later?: number }>()
for (const p of peers) {
  const pid = p.pid()
  if (pid !== undefined && !p.noMemory && (p.port >= 0 || p.limitedPort)) memory.set(p.name, { idle: rssMb(pid) })
}

const median = (xs: number[]) => {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((x, y) => x - y)
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}
/** The open-loop rate of each case's latency rounds, when it is set per case (`--rate half`). */
const caseRates = new Map<string, number>()
const cases = CASES.filter((c) => !ONLY || ONLY.includes(c.id))
const startedAt = Date.now()
for (const c of cases) {
  const runnable: [Peer, number][] = []
  for (const p of peers) {
    const port = portFor(p, c)
    if (port === undefined) continue
    const spec = { ...c.request, path: pathFor(p, c) }
    // One check first: a peer that answers the wrong status is reported, not measured.
    let status = 0
    if (c.socket) {
      const r = await socketMessages({ port, path: spec.path, headers: socketHeaders(port), seconds: 0.3, sockets: 1 })
      status = r.failed === 0 && r.messages > 0 ? 101 : 0
    } else for (let i = 0; i < (c.limited ? 40 : 1); i++) status = await oneRequest(port, spec).catch(() => 0)
    if (status !== c.expect) {
      cellFor(c, p).wrongStatus = `answered ${status}, expected ${c.expect}`
      continue
    }
    runnable.push([p, port])
  }
  const latency = async (round: number, rate: number) => {
    for (const [p, port] of runnable) {
      const spec = { ...c.request, path: pathFor(p, c) }
      const cell = cellFor(c, p)
      const r = await constantRate({ port, request: spec, rate, durationMs: DURATION * 1000, connections: 50 })
      cell.p50.push(r.p50)
      cell.p99.push(r.p99)
      cell.latencyErrors += r.errors
      process.stderr.write(
        `${c.id} ${p.name}: round ${round + 1} at ${Math.round(rate)} req/s p99 ${r.p99.toFixed(2)} ms\n`,
      )
    }
  }
  /** One closed-loop run: wrk, or the socket client for Realtime. */
  const load = async (p: Peer, port: number, seconds: number) => {
    const spec = { ...c.request, path: pathFor(p, c) }
    if (!c.socket) return wrk(port, spec, seconds, c.connections)
    const r = await socketMessages({ port, path: spec.path, headers: socketHeaders(port), seconds })
    return r.failed > 0 ? undefined : { rps: r.messagesPerSecond, requests: r.messages, other: 0 }
  }
  if (WARMUP > 0)
    for (const [p, port] of runnable) {
      await load(p, port, WARMUP)
      process.stderr.write(`${c.id} ${p.name}: warmed up\n`)
    }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [p, port] of runnable) {
      const cell = cellFor(c, p)
      const pid = p.pid()!
      const metering = p.metered ? await toggleMeter(pid, true) : undefined
      const before = cpuMs(pid)
      const w = await load(p, port, DURATION)
      const used = cpuMs(pid) - before
      const metered = metering ? await toggleMeter(pid, false) : undefined
      // A peer that starts refusing mid-run (a limit the case did not turn off) is reported, not measured.
      if (w && c.expect < 400 && w.other > 0) cell.wrongStatus = `${w.other} of ${w.requests} answers not 2xx or 3xx`
      if (w) {
        cell.rps.push(w.rps)
        cell.cpuUsPerRequest.push((used * 1000) / w.requests)
        if (metered) cell.heapBytesPerRequest.push(metered.heapAllocated / w.requests)
      }
      process.stderr.write(
        `${c.id} ${p.name}: ${w ? Math.round(w.rps) : '-'} /s${metered && w ? `, ${((used * 1000) / w.requests).toFixed(1)} µs, ${(metered.heapAllocated / w.requests / 1024).toFixed(2)} KB heap each` : ''}\n`,
      )
    }
    if (c.latency && !HALF_RATE) await latency(round, RATE)
  }
  if (c.latency && HALF_RATE) {
    // Half of authgate's own maximum in this case (its single-process row), else of the case's first peer.
    const own = runnable.find(([p]) => p.name === 'authgate' || p.name === 'authgate (memory store)') ?? runnable[0]
    const rate = own ? median(cellFor(c, own[0]).rps) / 2 : NaN
    if (Number.isFinite(rate) && rate > 0) {
      caseRates.set(c.id, rate)
      for (let round = 0; round < ROUNDS; round++) await latency(round, rate)
    }
  }
  for (const [p] of runnable) {
    const pid = p.pid()
    if (pid !== undefined) cellFor(c, p).rssAfter = rssMb(pid)
  }
}

// Memory: after the load, then with IDLE idle keep-alive connections held open.
for (const p of peers) {
  const pid = p.pid()
  const m = memory.get(p.name)
  if (pid === undefined || !m || p.port < 0) continue
  m.loaded = rssMb(pid)
  if (IDLE > 0) {
    const spec = { method: 'GET' as const, path: p.direct ? '/settings' : '/auth/settings' }
    const close = await idleConnections(p.port, spec, IDLE)
    await sleep(300)
    m.idleConns = rssMb(pid)
    close()
    await sleep(200)
  }
}
// A minute after the load, idle: what a process keeps of what the load grew.
const AFTER_MS = 60_000
await sleep(AFTER_MS)
for (const p of peers) {
  const pid = p.pid()
  const m = memory.get(p.name)
  if (pid !== undefined && m?.loaded !== undefined) m.later = rssMb(pid)
}
stopAll()

// --- report ------------------------------------------------------------------------------------

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '–')
const thousands = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–')

function version(cmd: string, args: string[], re: RegExp): string {
  const r = spawnSync(cmd, args)
  return re.exec(r.stdout?.toString() + r.stderr?.toString())?.[1] ?? 'n/a'
}
const versions = [
  `Node.js ${process.version}`,
  `authgate ${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version} (${spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']).stdout.toString().trim()})`,
  `nginx ${version('nginx', ['-v'], /nginx\/(\S+)/)}`,
  `HAProxy ${version('haproxy', ['-v'], /version (\S+)/)}`,
  `Caddy ${version('caddy', ['version'], /v?(\d+\.\d+\.\d+)/)}`,
  `wrk ${version('wrk', ['-v'], /wrk (\S+)/)}`,
  `Redis ${version('redis-cli', ['-h', '127.0.0.1', 'info', 'server'], /redis_version:(\S+)/)}`,
]
const command = `node bench/run.ts ${process.argv.slice(2).join(' ')}`.trim()

const lines: string[] = []
lines.push(`Run ${new Date(startedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC, \`${command}\``)
lines.push('')
lines.push(
  `Machine: ${cpus().length} × ${cpus()[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB, Linux ${release()} (shared with other work: noisy). ${versions.join(', ')}. authgate's allocator: ${allocatorLabel}.`,
)
lines.push('')
lines.push(
  `Max: wrk -t1 -c${CONNECTIONS} (the ${OBJECT_MB} MB objects: -c4), ${DURATION} s, median of ${ROUNDS} interleaved rounds${WARMUP > 0 ? ` after ${WARMUP} s of unmeasured load per peer and case` : ''}; Realtime: 16 sockets, 32 messages in flight on each (bench/socket-load.ts), echoed by a stand-in Realtime (bench/peers/stand-ins.ts). Latency: open loop at ${HALF_RATE ? `half of authgate's maximum in each case (${[...caseRates].map(([id, r]) => `${id}: ${thousands(r)}`).join(', ')} req/s)` : `${thousands(RATE)} req/s`} over 50 connections for ${DURATION} s (bench/load.ts; from the time each request was due), median of the rounds' p50 and p99. Per unit (a request, a MB of an object, a socket message), medians of the rounds: CPU, user + system time of the peer's processes (/proc) during the closed-loop run; heap, the bytes the V8 heap of a Node.js peer allocated in it (bench/peers/meter.ts). These two hold on a shared machine; the rates do not. Ratios: against the runtime floor (bench/peers/node-floor.ts: node:http, undici's dispatch API, a prebuilt 429, a TCP pipe for the socket) and the framework floor (bench/peers/fastify-floor.ts: the same behind a bare Fastify route); "× its floor" is against the floor the case is judged by (* runtime, † framework).`,
)
lines.push('')
lines.push(
  '| case | peer | max /s | × runtime floor | × framework floor | p50 ms | p99 ms | CPU µs / unit | CPU × its floor | heap KB / unit | heap × its floor | RSS MB after |',
)
lines.push('|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|')
for (const c of cases) {
  const per = c.unitsPerRequest ?? 1
  const stat = (peer: string) => {
    const cell = results.get(`${c.id}|${peer}`)
    if (!cell || cell.wrongStatus) return undefined
    return {
      rate: median(cell.rps) * per,
      cpu: median(cell.cpuUsPerRequest) / per,
      heap: median(cell.heapBytesPerRequest) / per,
    }
  }
  const runtime = stat(RUNTIME_FLOOR)
  const framework = stat(FRAMEWORK_FLOOR)
  const own = c.floor === 'runtime' ? runtime : framework
  const mark = c.floor === 'runtime' ? '*' : '†'
  const unit = c.unit === 'req' ? '/s' : c.unit === 'MB' ? 'MB/s' : 'msg/s'
  for (const p of peers) {
    const cell = results.get(`${c.id}|${p.name}`)
    if (!cell) continue
    if (cell.wrongStatus) {
      lines.push(`| ${c.label} | ${p.name} | ${cell.wrongStatus} | | | | | | | | | |`)
      continue
    }
    const s = stat(p.name)!
    const isFloor = p.name === RUNTIME_FLOOR || p.name === FRAMEWORK_FLOOR
    const ratio = (x: number, y: number | undefined) => (y === undefined ? '' : fmt(x / y, 2))
    lines.push(
      [
        '',
        c.label,
        p.name,
        `${c.unit === 'MB' ? fmt(s.rate, 0) : thousands(s.rate)} ${unit}`,
        p.name === RUNTIME_FLOOR ? '' : ratio(s.rate, runtime?.rate),
        p.name === FRAMEWORK_FLOOR ? '' : ratio(s.rate, framework?.rate),
        c.latency ? fmt(median(cell.p50), 2) : '',
        c.latency ? fmt(median(cell.p99), 2) + (cell.latencyErrors ? ` (${cell.latencyErrors} late/lost)` : '') : '',
        fmt(s.cpu, 1),
        isFloor ? '' : own === undefined ? '' : `${ratio(s.cpu, own.cpu)} ${mark}`,
        fmt(s.heap / 1024, 2),
        isFloor ? '' : own === undefined || !Number.isFinite(s.heap) ? '' : `${ratio(s.heap, own.heap)} ${mark}`,
        p.noMemory || cell.rssAfter === undefined ? '' : fmt(cell.rssAfter),
        '',
      ]
        .join(' | ')
        .trim(),
    )
  }
}
// Protected routes: the verified route against the open one, on the same process.
for (const p of peers.filter((x) => x.protect)) {
  const open = results.get(`f|${p.name}`)
  const verified = results.get(`g|${p.name}`)
  if (!open || !verified || open.wrongStatus || verified.wrongStatus) continue
  lines.push('')
  lines.push(
    `${p.name}: the verified route at ${fmt(median(verified.rps) / median(open.rps), 2)} × the open route's req/s (${thousands(median(verified.rps))} / ${thousands(median(open.rps))}).`,
  )
}
lines.push('')
lines.push(
  `| peer | RSS idle MB | RSS after the load MB | RSS with ${thousands(IDLE)} idle keep-alive connections MB | RSS a minute later, idle MB |`,
)
lines.push('|---|--:|--:|--:|--:|')
for (const [name, m] of memory) {
  if (m.loaded === undefined) continue
  lines.push(`| ${name} | ${fmt(m.idle)} | ${fmt(m.loaded)} | ${fmt(m.idleConns ?? NaN)} | ${fmt(m.later ?? NaN)} |`)
}
const table = lines.join('\n')
console.log('\n' + table)
console.log(`\n(the run took ${((Date.now() - startedAt) / 60_000).toFixed(1)} minutes of measuring)`)

if (!opts['no-write']) {
  const file = join(ROOT, 'BENCHMARKS.md')
  const BEGIN = '<!-- bench:begin (written by npm run bench) -->'
  const END = '<!-- bench:end -->'
  const current = existsSync(file) ? readFileSync(file, 'utf8') : `# Benchmarks\n\n${BEGIN}\n${END}\n`
  const i = current.indexOf(BEGIN)
  const j = current.indexOf(END)
  const next =
    i === -1 || j === -1
      ? `${current.trimEnd()}\n\n${BEGIN}\n${table}\n${END}\n`
      : `${current.slice(0, i + BEGIN.length)}\n${table}\n${current.slice(j)}`
  writeFileSync(file, next)
  console.log(`\nwritten to ${file}`)
}
rmSync(DIR, { recursive: true, force: true })
process.exit(0)
