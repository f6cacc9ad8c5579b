/**
 * `npm run bench:instructions`: the instructions each peer's process executes per request (per MB of
 * an object), counted by valgrind's callgrind, against the floor each case is judged by.
 *
 *   node bench/instructions.ts [--only a,c,d,rest] [--peers authgate,fastify,node] [--baseline <git ref>]
 *                              [--requests 1000] [--windows 3] [--warmup 20000] [--connections 16]
 *                              [--processes 1] [--jobs 2] [--port-offset 0]
 *
 * Why: CPU-seconds per request, what bench/run.ts reads from /proc, move 1.3–1.5 × between rounds on
 * a shared two-core machine, more than the margins the targets set against the floors (CPU ≤ 1.2 ×
 * the framework floor, say), and hardware counters (perf stat) are not available here. callgrind
 * runs the process on a simulated CPU and counts the instructions it executes, in every thread (V8's
 * compiler and garbage collector threads are real work), the same whatever else the machine does.
 * Instructions are not time (a cache miss costs more than an add) but they are what the code asks
 * of the CPU, and a change that removes work from the request path removes instructions.
 *
 * How: each peer runs alone, one process per case, under `valgrind --tool=callgrind` (authgate as
 * bench/run.ts starts it: `node --max-semi-space-size=8 dist/main.js`, its environment,
 * MALLOC_ARENA_MAX=2); the fake backend (nginx) and the stand-ins run natively. A client in this
 * process sends an exact number of requests over `--connections` keep-alive connections, a new
 * request as each answer comes. First `--warmup` requests unmeasured and uninstrumented (V8 tiers
 * up on its own counts, whatever the speed), then `--windows` windows of `--requests` each, between
 * which callgrind's counters are zeroed and dumped (its monitor commands, through vgdb): only the
 * windows count, not the start-up nor the warm-up. Each answer's status is checked. The 429 case
 * has bench/run.ts's two rows, the memory store and (when a Redis answers on 127.0.0.1:6379) the
 * Redis store, for authgate and the baseline. The figure is
 * the windows' instructions over their units; "spread of windows" is how far the windows of one
 * process are apart, "spread of processes" how far fresh processes are (--processes). A process
 * whose windows still fall one after another was not warm: the table says so. 4,000 requests were
 * not enough: TurboFan still compiled parts of authgate's path (and of the floor's) in the windows
 * after them, one window in three 20 to 50 % above the others; uninstrumented, 20,000 take about
 * as long as one instrumented window of 1,000.
 *
 * Every node runs with V8's `--single-threaded`: its compiler and garbage collector work on the
 * main thread, all of it counted. With its helper threads (`--v8-threads`) their share followed the
 * wall time, not the requests: the runtime floor's main thread executed 177–183 k instructions per
 * request in each of four windows while its helper threads added from 1 k to 117 k, most in the
 * windows that took longest. valgrind runs one thread at a time, and a helper thread runs on (a
 * concurrent marking revisits what the requests change) while the main thread waits on the
 * network, which is as long as the machine's load makes it. Single-threaded, the same work is done
 * and counted once. And with `--no-memory-reducer`: V8's memory reducer starts a full collection
 * when the allocation rate, in bytes per millisecond, is low, which it always is 50 × slowed down;
 * natively, at saturation, it does not run. With it, single-threaded, the floor's windows went from
 * 187 k to 425 k instructions per request as they took longer, the rise all in the major collector's
 * marking.
 *
 * Sixteen connections, not wrk's 64: under callgrind a peer runs some 50 × slower than natively, so
 * any number of connections keeps it saturated; at 64 the windows were further apart (how many
 * requests each turn of the event loop finds depends on timing, which callgrind does not hold
 * still). Measures, never judges: nothing here fails on a figure.
 */
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { parseArgs } from 'node:util'
import { callgrindInstructions, instructionsTable, type Row, type Run } from './callgrind.ts'
import { requestBytes, type RequestSpec } from './load.ts'
import { OBJECT_BYTES } from './peers/stand-ins.ts'
import { openSockets } from './socket-load.ts'
import {
  SERVICE_ARGS,
  authgateEnv,
  benchCases,
  buildBaseline,
  floorArgs,
  FLOORS,
  FRAMEWORK_FLOOR,
  pathOn,
  render,
  restEnv,
  ROOT,
  RUNTIME_FLOOR,
  socketHeaders,
  socketsEnv,
  UNLIMITED,
  waitForPort,
  type Case,
} from './setup.ts'

const HELP = `node bench/instructions.ts [options]: instructions per request under callgrind, against the floors

  --only a,c,d,rest        cases of bench/run.ts: a b b2 c d rest e rt sd (no su: the client sends no bodies)
  --peers authgate,fastify,node   peers, by prefix (the baseline is added by --baseline; answer: the
                           runtime floor answering authgate's 429, case d only)
  --baseline <git ref>     also authgate built at that commit
  --requests 1000          requests in each measured window (Realtime's socket: × 20 messages)
  --windows 3              measured windows per process
  --warmup 20000           unmeasured requests first (the 10 MB objects: a tenth; messages: × 20)
  --connections 16         keep-alive connections (the 10 MB objects: 4)
  --processes 1            fresh processes per peer and case (the spread between them is reported)
  --jobs 2                 peers measured at the same time (each under valgrind runs on one core)
  --valgrind='<options>'   more valgrind options (--separate-threads=yes: each thread's count too)
  --v8-threads             V8's compiler and GC threads as natively (default: --single-threaded, see above)
  --port-offset 0          moves the ports (19601…)
  --keep <dir>             keeps each process's dumps and V8's map of its compiled code (node
                           --perf-basic-prof) in <dir>, for callgrind_annotate per function
  --help`

const { values: opts } = parseArgs({
  options: {
    only: { type: 'string', default: 'a,c,d,rest' },
    peers: { type: 'string', default: 'authgate,fastify,node' },
    baseline: { type: 'string' },
    requests: { type: 'string', default: '1000' },
    windows: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '20000' },
    connections: { type: 'string', default: '16' },
    processes: { type: 'string', default: '1' },
    jobs: { type: 'string', default: '2' },
    valgrind: { type: 'string', default: '' },
    'v8-threads': { type: 'boolean', default: false },
    'port-offset': { type: 'string', default: '0' },
    keep: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
})
if (opts.help) {
  console.log(HELP)
  process.exit(0)
}
const REQUESTS = Number(opts.requests)
const WINDOWS = Number(opts.windows)
const WARMUP = Number(opts.warmup)
const CONNECTIONS = Number(opts.connections)
const PROCESSES = Number(opts.processes)
const JOBS = Number(opts.jobs)
const V8_THREADS = opts['v8-threads']
const VALGRIND = opts.valgrind.split(' ').filter((a) => a !== '')
const ONLY = opts.only.split(',').map((s) => s.trim())
const PEER_FILTER = opts.peers.split(',').map((s) => s.trim())
for (const [name, n] of Object.entries({ REQUESTS, WINDOWS, WARMUP, CONNECTIONS, PROCESSES, JOBS }))
  if (!Number.isInteger(n) || n < (name === 'WARMUP' ? 0 : 1)) throw new Error(`--${name.toLowerCase()}: ${n}`)

const have = (bin: string) => spawnSync('which', [bin]).status === 0
for (const bin of ['valgrind', 'vgdb', 'nginx'])
  if (!have(bin)) {
    console.error(`${bin} is required (apt-get install -y ${bin === 'nginx' ? 'nginx' : 'valgrind'})`)
    process.exit(1)
  }

const offset = Number(opts['port-offset'])
// Apart from bench/run.ts's ports (19501…), so that both can run on one machine.
const PORTS = {
  backend: 19601 + offset,
  standInRealtime: 19602 + offset,
  standInStorage: 19603 + offset,
  /** The first slot's peer; the next slots' ten ports further each. */
  peer: 19610 + offset,
}
const DIR = mkdtempSync(join(tmpdir(), 'authgate-instructions-'))
const KEEP = opts.keep
if (KEEP !== undefined) mkdirSync(KEEP, { recursive: true })

// --- processes ---------------------------------------------------------------------------------

const children = new Set<ChildProcess>()
function start(cmd: string, args: string[], env: Record<string, string> = {}, cwd = ROOT): ChildProcess {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)))
  child.on('exit', (code, signal) => {
    children.delete(child)
    if (!stopping.has(child) && code !== 0) console.error(`${cmd} ${args.join(' ')} exited (${code ?? signal}): ${err}`)
  })
  children.add(child)
  return child
}
const stopping = new Set<ChildProcess>()
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  stopping.add(child)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  // The peer's last dump (at its exit) is not read: SIGKILL spares the wait for it.
  child.kill('SIGKILL')
  await exited
}
process.on('exit', () => {
  // nginx's master stops its workers on SIGTERM; killed outright, it would leave them on the port.
  for (const c of children) c.kill(c.spawnfile === 'nginx' ? 'SIGTERM' : 'SIGKILL')
})
process.on('SIGINT', () => process.exit(130))

writeFileSync(join(DIR, 'backend.conf'), render('backend.nginx.conf', { DIR, BACKEND_PORT: PORTS.backend }))
start('nginx', ['-c', join(DIR, 'backend.conf'), '-g', 'daemon off;'])
start(process.execPath, [
  join(ROOT, 'bench/peers/stand-ins.ts'),
  String(PORTS.standInRealtime),
  String(PORTS.standInStorage),
])

// --- peers -------------------------------------------------------------------------------------

/** The ports of the peer measured in one of the `--jobs` slots. */
interface SlotPorts {
  peer: number
  limited: number
  socket: number
}
const slotPorts = (slot: number): SlotPorts => ({
  peer: PORTS.peer + 10 * slot,
  limited: PORTS.peer + 10 * slot + 1,
  socket: PORTS.peer + 10 * slot + 2,
})

/** How a peer runs in a case: its node arguments, environment and directory, and the port asked. */
interface Launch {
  args: string[]
  env: Record<string, string>
  cwd: string
  port: number
}
interface Peer {
  name: string
  launch(c: Case, ports: SlotPorts): Launch | undefined
}

/**
 * authgate in a case, configured as bench/run.ts's authgate rows are (the memory store for the 429).
 * With `redis`, the row bench/run.ts calls authgate (Redis store): the 429 case only, its limit in
 * the shared Redis (its own key prefix), refusals answered from the deny cache.
 */
function authgateLaunch(cwd: string, forward: Record<string, string>, redis?: { prefix: string }) {
  return (c: Case, ports: SlotPorts): Launch | undefined => {
    if (c.protectOnly) return undefined
    if (redis !== undefined) {
      if (!c.limited) return undefined
      const env = {
        ...authgateEnv(ports.limited, PORTS.backend),
        AUTHGATE_REDIS_URL: 'redis://127.0.0.1:6379',
        AUTHGATE_REDIS_KEY_PREFIX: `${redis.prefix}${ports.limited}:`,
        // Some 50 × slower under callgrind: the default 100 ms is a round trip of 2 ms natively, which
        // a turn of 16 requests outlasts, and every decision then fails open (a 200, the forwarding).
        AUTHGATE_REDIS_TIMEOUT: '10s',
      }
      return { args: SERVICE_ARGS, env, cwd, port: ports.limited }
    }
    // Realtime's socket: cookie sessions on, as bench/run.ts's authgate (cookie sessions) row.
    if (c.socket)
      return {
        args: SERVICE_ARGS,
        env: { ...authgateEnv(ports.peer, PORTS.backend), ...socketsEnv(PORTS.standInRealtime) },
        cwd,
        port: ports.peer,
      }
    const port = c.limited ? ports.limited : ports.peer
    const env = c.limited ? {} : { ...forward, ...restEnv(PORTS.backend, PORTS.standInStorage) }
    return { args: SERVICE_ARGS, env: { ...authgateEnv(port, PORTS.backend), ...env }, cwd, port }
  }
}
const want = (name: string) => PEER_FILTER.some((f) => name.startsWith(f))
const peers: Peer[] = []
// The Redis store's rows when a Redis answers on 127.0.0.1:6379, as in bench/run.ts.
const redisUp =
  have('redis-cli') && spawnSync('redis-cli', ['-h', '127.0.0.1', 'ping']).stdout?.toString().trim() === 'PONG'
const redisPrefix = `bench-instructions:${process.pid}:`
if (want('authgate')) {
  execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' })
  peers.push({ name: 'authgate', launch: authgateLaunch(ROOT, UNLIMITED) })
  if (redisUp)
    peers.push({ name: 'authgate (Redis store)', launch: authgateLaunch(ROOT, UNLIMITED, { prefix: redisPrefix }) })
}
if (opts.baseline) {
  const dir = join(DIR, 'baseline')
  mkdirSync(dir)
  const forward = buildBaseline(opts.baseline, dir)
  peers.push({ name: `authgate @${opts.baseline}`, launch: authgateLaunch(dir, forward) })
  if (redisUp)
    peers.push({
      name: `authgate @${opts.baseline} (Redis store)`,
      launch: authgateLaunch(dir, forward, { prefix: `${redisPrefix}baseline:` }),
    })
}
for (const floor of FLOORS.filter((f) => want(f.want)))
  peers.push({
    name: floor.name,
    launch: (c, ports) => {
      if (c.protectOnly || c.authgateOnly) return undefined
      // Only the runtime floor relays Storage's objects and Realtime's socket (a TCP pipe).
      if ((c.storageOnly || c.socket) && floor.want !== 'node') return undefined
      // The answer floor differs from the runtime floor only on its limited port.
      if (floor.want === 'answer' && !c.limited) return undefined
      const args = floorArgs(floor, {
        port: ports.peer,
        limited: ports.limited,
        backend: PORTS.backend,
        storage: PORTS.standInStorage,
        socket: ports.socket,
        realtime: PORTS.standInRealtime,
      })
      return { args, env: {}, cwd: ROOT, port: c.socket ? ports.socket : c.limited ? ports.limited : ports.peer }
    },
  })

// --- the client --------------------------------------------------------------------------------

/**
 * Keep-alive connections that send an exact number of requests, a new one on a connection as its
 * answer is complete, and count the answers' statuses. Bodies are counted, not kept (a 10 MB object
 * is skipped through); a chunked body is framed by its last chunk. A connection the peer closes
 * (node:http's 5 s keep-alive timeout, while callgrind dumps on a loaded machine) is opened again:
 * `reopen()` before a window, so that the window does not pay for it, and during a run when it
 * closes under a request, which is sent again.
 */
async function openConnections(port: number, count: number) {
  const open = () =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect(port, '127.0.0.1')
      s.setNoDelay(true)
      s.once('error', reject)
      s.once('connect', () => {
        s.off('error', reject)
        s.on('error', () => {}) // 'close' follows
        resolve(s)
      })
    })
  const sockets: Socket[] = await Promise.all(Array.from({ length: count }, open))
  let reconnects = 0
  return {
    /** Connections opened again since the start. */
    reconnects: () => reconnects,
    async reopen(): Promise<void> {
      for (let i = 0; i < sockets.length; i++)
        if (sockets[i]!.destroyed || sockets[i]!.readyState !== 'open') {
          sockets[i] = await open()
          reconnects++
        }
    },
    run(bytes: Buffer, n: number): Promise<Record<number, number>> {
      const statuses: Record<number, number> = {}
      let sent = 0
      let done = 0
      return new Promise((resolve, reject) => {
        if (n === 0) return resolve(statuses)
        const drive = (s: Socket, slot: number) => {
          // Closed since it was last used: opened again (the window pays for it; counted).
          if (s.destroyed || s.readyState !== 'open') {
            reconnects++
            open().then((fresh) => {
              sockets[slot] = fresh
              drive(fresh, slot)
            }, reject)
            return
          }
          let pending: Buffer = Buffer.alloc(0)
          let state: 'head' | 'length' | 'chunked' = 'head'
          let remaining = 0
          let status = 0
          let inFlight = false
          const next = () => {
            if (sent < n) {
              sent++
              inFlight = true
              s.write(bytes)
            }
          }
          const answered = () => {
            state = 'head'
            inFlight = false
            statuses[status] = (statuses[status] ?? 0) + 1
            if (++done === n) resolve(statuses)
            else next()
          }
          s.removeAllListeners('data')
          s.removeAllListeners('close')
          s.on('close', () => {
            if (done >= n) return
            if (inFlight) sent--
            reconnects++
            open().then((fresh) => {
              sockets[slot] = fresh
              drive(fresh, slot)
            }, reject)
          })
          s.on('data', (chunk: Buffer) => {
            pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
            for (;;) {
              if (state === 'length') {
                const take = Math.min(remaining, pending.length)
                remaining -= take
                pending = pending.subarray(take)
                if (remaining > 0) return
                answered()
              } else if (state === 'chunked') {
                // The last chunk: at the start of the body, or after another chunk's data.
                const stop =
                  pending.subarray(0, 5).toString('latin1') === '0\r\n\r\n' ? 5 : pending.indexOf('\r\n0\r\n\r\n') + 7
                if (stop === 6) return
                pending = pending.subarray(stop)
                answered()
              } else {
                const end = pending.indexOf('\r\n\r\n')
                if (end === -1) return
                const text = pending.toString('latin1', 0, end)
                pending = pending.subarray(end + 4)
                status = Number(text.slice(9, 12))
                const length = /\r\ncontent-length:\s*(\d+)/i.exec(text)
                if (/\r\ntransfer-encoding:\s*chunked/i.test(text)) state = 'chunked'
                else if (length && Number(length[1]) > 0) {
                  state = 'length'
                  remaining = Number(length[1])
                } else answered()
              }
            }
          })
          next()
        }
        sockets.forEach(drive)
      })
    },
    close() {
      for (const s of sockets) s.destroy()
    },
  }
}

// --- measuring -------------------------------------------------------------------------------

const run = promisify(execFile)
/**
 * One of callgrind's monitor commands (`instrumentation on`, `zero`, `dump`) to the peer's valgrind,
 * through vgdb, as callgrind_control sends them (without its listing of every valgrind process).
 */
const control = (pid: number, command: string, env: Record<string, string>) =>
  // valgrind names its end of the pipe after $HOST (authgate's listening address): vgdb must too.
  run('vgdb', [`--pid=${pid}`, ...command.split(' ')], { env: { ...process.env, ...env } })

/**
 * The instructions of the peer's n-th dump (callgrind writes `<file>.<n>`, or `<file>.<n>-<thread>`
 * for each thread with --separate-threads=yes, then summed), once it is written.
 */
async function dumped(file: string, n: number): Promise<{ total: number; threads: number[] }> {
  const until = Date.now() + 30_000
  const dir = dirname(file)
  const prefix = `${basename(file)}.${n}`
  for (;;) {
    try {
      const names = readdirSync(dir).filter((f) => f === prefix || f.startsWith(`${prefix}-`))
      if (names.length === 0) throw new Error(`no dump ${prefix}`)
      const threads = names.sort().map((f) => callgrindInstructions(readFileSync(join(dir, f), 'utf8')))
      return { total: threads.reduce((a, b) => a + b, 0), threads }
    } catch (error) {
      if (Date.now() > until) throw error
    }
    await sleep(100)
  }
}

const format = (statuses: Record<number, number>) =>
  Object.entries(statuses)
    .map(([s, n]) => `${n} × ${s}`)
    .join(', ')

/** One fresh process of a peer under callgrind in a case: its measured windows, or why there are none. */
async function measure(peer: Peer, c: Case, launch: Launch): Promise<Run | string> {
  const out = join(DIR, `cg-${c.id}-${peer.name.replace(/\W+/g, '_')}-${Date.now()}`)
  const child = start(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${out}`,
      ...VALGRIND,
      process.execPath,
      '--no-memory-reducer',
      ...(V8_THREADS ? [] : ['--single-threaded']),
      // V8 writes /tmp/perf-<pid>.map, the address and name of each function it compiles: callgrind
      // names JIT code only by its address.
      ...(KEEP !== undefined ? ['--perf-basic-prof'] : []),
      ...launch.args,
    ],
    launch.env,
    launch.cwd,
  )
  try {
    const pid = child.pid!
    const t0 = Date.now()
    const took = () => `${((Date.now() - t0) / 1000).toFixed(0)} s`
    // Start-up under valgrind is slow (about 10 s with instrumentation off, more on a loaded machine).
    if (!(await waitForPort(launch.port, 600_000))) return `did not listen on ${launch.port}`
    process.stderr.write(`${c.id} ${peer.name}: listening after ${took()}\n`)
    if (c.socket) return await measureSocket(peer, c, launch, { pid, out, took })
    const spec: RequestSpec = { ...c.request, path: pathOn(c, {}) }
    if (spec.bodyFile !== undefined) return 'uploads are not driven by this client'
    const bytes = requestBytes(launch.port, spec)
    const units = c.unitsPerRequest ?? 1
    // The 10 MB objects: a tenth of the requests, each a hundred times the bytes of a small answer.
    const scale = c.unit === 'MB' ? 10 : 1
    const conns = await openConnections(launch.port, c.connections ?? CONNECTIONS)
    try {
      const warm = await conns.run(bytes, Math.ceil(WARMUP / scale))
      // The 429 case's limited port answers 200s until the client is over its limit.
      if (!c.limited && Object.keys(warm).some((s) => Number(s) !== c.expect))
        return `answered ${format(warm)} when warming up, expected ${c.expect}`
      process.stderr.write(`${c.id} ${peer.name}: warmed up after ${took()}\n`)
      // Instrumented from here only: the warm-up runs some 10 × faster without (V8 tiers up on its own
      // counts, whatever the speed), and what valgrind spends instrumenting is not counted.
      await control(pid, 'instrumentation on', launch.env)
      const windows: Run['windows'] = []
      for (let w = 1; w <= WINDOWS; w++) {
        const n = Math.ceil(REQUESTS / scale)
        await conns.reopen()
        await control(pid, 'zero', launch.env)
        const statuses = await conns.run(bytes, n)
        await control(pid, 'dump', launch.env)
        const { total: instructions, threads } = await dumped(out, w)
        // A client over its limit gets one request through now and then, as the limit's window moves on
        // (the longer the window takes, the more): reported, measured in.
        const others = n - (statuses[c.expect] ?? 0)
        if (others > (c.limited ? n / 100 : 0)) return `answered ${format(statuses)}, expected ${c.expect}`
        if (others > 0) process.stderr.write(`${c.id} ${peer.name}: window ${w}: ${format(statuses)}\n`)
        windows.push({ instructions, units: n * units })
        process.stderr.write(
          `${c.id} ${peer.name}: window ${w}: ${Math.round(instructions / (n * units)).toLocaleString('en-US')} instructions / ${c.unit} (${took()})${threads.length > 1 ? `, threads ${threads.map((t) => Math.round(t / (n * units))).join(' ')}` : ''}\n`,
        )
      }
      if (conns.reconnects() > 0)
        process.stderr.write(`${c.id} ${peer.name}: ${conns.reconnects()} connections opened again\n`)
      return { windows }
    } finally {
      conns.close()
    }
  } finally {
    await stop(child)
    if (KEEP !== undefined) keep(out, child.pid!)
  }
}

/** The process's dumps and V8's code map, copied into --keep's directory. */
function keep(out: string, pid: number): void {
  const name = basename(out)
  for (const f of readdirSync(DIR)) if (f.startsWith(`${name}.`)) copyFileSync(join(DIR, f), join(KEEP!, f))
  const map = `/tmp/perf-${pid}.map`
  if (existsSync(map)) {
    copyFileSync(map, join(KEEP!, `${name}.map`))
    rmSync(map)
  }
}

/**
 * Realtime's socket: bench/run.ts's 16 sockets with 32 messages in flight on each, an exact number
 * of messages per window. A message costs a small part of a request (a few thousand instructions),
 * so windows and warm-up count 20 messages for each request asked: 20,000 a window by default.
 */
const MESSAGES_PER_REQUEST = 20
async function measureSocket(
  peer: Peer,
  c: Case,
  launch: Launch,
  { pid, out, took }: { pid: number; out: string; took: () => string },
): Promise<Run | string> {
  const path = c.request.path
  const floor = peer.name === RUNTIME_FLOOR
  const sockets = await openSockets({
    port: launch.port,
    path: floor ? '/socket/websocket' : path,
    headers: floor ? {} : socketHeaders(launch.port),
  })
  try {
    if (sockets.failed > 0) return `${sockets.failed} sockets got no 101`
    await sockets.run(WARMUP * MESSAGES_PER_REQUEST)
    process.stderr.write(`${c.id} ${peer.name}: warmed up after ${took()}\n`)
    await control(pid, 'instrumentation on', launch.env)
    const windows: Run['windows'] = []
    for (let w = 1; w <= WINDOWS; w++) {
      const n = REQUESTS * MESSAGES_PER_REQUEST
      await control(pid, 'zero', launch.env)
      await sockets.run(n)
      await control(pid, 'dump', launch.env)
      const { total: instructions, threads } = await dumped(out, w)
      windows.push({ instructions, units: n })
      process.stderr.write(
        `${c.id} ${peer.name}: window ${w}: ${Math.round(instructions / n).toLocaleString('en-US')} instructions / msg (${took()})${threads.length > 1 ? `, threads ${threads.map((t) => Math.round(t / n)).join(' ')}` : ''}\n`,
      )
    }
    return { windows }
  } finally {
    sockets.close()
  }
}

const CASES = benchCases({ uploadFile: join(DIR, 'none'), benchToken: '' }).filter((c) => ONLY.includes(c.id))
if (CASES.length === 0) throw new Error(`--only ${opts.only}: no such case`)
if (!(await waitForPort(PORTS.backend)) || !(await waitForPort(PORTS.standInStorage)))
  throw new Error('the fake backend or the stand-ins did not start')

const startedAt = Date.now()
const rows: Row[] = []
const floorNames = new Set<string>([RUNTIME_FLOOR, FRAMEWORK_FLOOR])
// The rows in the table's order; their processes measured JOBS at a time, in any order (a count
// does not depend on what runs beside it).
const work: { row: Row; peer: Peer; c: Case }[] = []
for (const c of CASES)
  for (const peer of peers) {
    if (!peer.launch(c, slotPorts(0))) continue
    const row: Row = {
      caseId: c.id,
      caseLabel: c.label,
      unit: c.unit,
      floor: c.floor,
      peer: peer.name,
      isFloor: floorNames.has(peer.name),
      runs: [],
    }
    rows.push(row)
    for (let p = 0; p < PROCESSES; p++) work.push({ row, peer, c })
  }
await Promise.all(
  Array.from({ length: JOBS }, async (_, slot) => {
    for (let next = work.shift(); next; next = work.shift()) {
      const { row, peer, c } = next
      if (row.problem !== undefined) continue
      const r = await measure(peer, c, peer.launch(c, slotPorts(slot))!).catch((e: Error) => e.message)
      if (typeof r === 'string') {
        row.problem = r
        process.stderr.write(`${c.id} ${peer.name}: ${r}\n`)
      } else row.runs.push(r)
    }
  }),
)

const command = `node bench/instructions.ts ${process.argv.slice(2).join(' ')}`.trim()
const commit = spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']).stdout.toString().trim()
const valgrind = spawnSync('valgrind', ['--version']).stdout.toString().trim()
console.log(
  `\nRun ${new Date(startedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC, \`${command}\`, authgate ${commit}, Node.js ${process.version}, ${valgrind}.`,
)
console.log(
  `\nInstructions executed by the peer's process under callgrind (all its threads; node ${V8_THREADS ? '' : '--single-threaded '}--no-memory-reducer), per unit, over ${WINDOWS} windows of ${REQUESTS} requests (the ${OBJECT_BYTES / 2 ** 20} MB objects: a tenth) after ${WARMUP} unmeasured ones, ${CONNECTIONS} keep-alive connections, ${PROCESSES} process${PROCESSES > 1 ? 'es' : ''} per peer and case. "× its floor" is against the floor the case is judged by (* runtime: bench/peers/node-floor.ts, † framework: bench/peers/fastify-floor.ts).\n`,
)
console.log(instructionsTable(rows, { runtime: RUNTIME_FLOOR, framework: FRAMEWORK_FLOOR }))
console.log(`\n(the run took ${((Date.now() - startedAt) / 60_000).toFixed(1)} minutes)`)
rmSync(DIR, { recursive: true, force: true })
process.exit(0)
