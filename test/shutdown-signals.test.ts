/**
 * Stopping however it is asked for, in every start mode the README gives: Ctrl-C in a terminal and
 * systemd's default stop signal the whole process group (npm, node, the cluster's workers all get
 * it, and npm forwards it once more); SIGTERM to the cluster primary alone. Requests in flight
 * (on a slow backend) must all complete, and every process must be gone afterwards.
 *
 * The start modes run at once, each in its own process group with its own backend and port. Two
 * things are timed: the backend's hold, which starts when a request arrives (each request is checked
 * to be still in flight when the signal goes out), and the 1 s within which a copy of the signal
 * (npm's, the primary's) counts as a repeat, which a busy machine delays by milliseconds.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { startFakeBackend } from './support/fake-backend.ts'

const ROOT = new URL('../', import.meta.url)
const IN_FLIGHT = 20
/** The backend holds every request this long: the signal arrives while all are in flight. */
const BACKEND_DELAY_MS = 2500

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

interface Started {
  child: ChildProcess
  /** The pids authgate logged (one per serving process). */
  servers: number[]
  url: string
  logs: () => string
}

/** Starts authgate in its own process group (as a terminal or systemd would) and waits for `servers` ready lines. */
async function start(command: string[], env: Record<string, string>, servers: number): Promise<Started> {
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout!.on('data', (c: Buffer) => (out += c))
  child.stderr!.on('data', (c: Buffer) => (out += c))
  const deadline = performance.now() + 60_000
  for (;;) {
    const ready = out
      .split('\n')
      .filter((l) => l.includes('"msg":"authgate ready"'))
      .map((l) => JSON.parse(l) as { pid: number; address: string })
    if (ready.length >= servers)
      return { child, servers: ready.map((r) => r.pid), url: ready[0]!.address, logs: () => out }
    if (child.exitCode !== null || performance.now() > deadline) throw new Error(`did not start:\n${out}`)
    await sleep(50)
  }
}

async function stopsGracefully(
  command: string[],
  env: Record<string, string>,
  options: { servers: number; signal: NodeJS.Signals; target: 'group' | 'leader' },
): Promise<void> {
  const backend = await startFakeBackend((_req, res) => {
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), BACKEND_DELAY_MS)
  })
  const { child, servers, url, logs } = await start(
    command,
    { AUTHGATE_BACKEND_URL: backend.url, AUTHGATE_CACHE_TTL: '0', ...env },
    options.servers,
  )
  const pid = child.pid!
  const agent = new Agent({ connections: IN_FLIGHT * 2 })
  try {
    let answered = 0
    const inFlight = Array.from({ length: IN_FLIGHT }, (_, i) =>
      request(`${url}/auth/health?i=${i}`, { dispatcher: agent })
        .then(
          async (r) => ({ status: r.statusCode, body: await r.body.text() }),
          (err: Error) => ({ status: 0, body: err.message }),
        )
        .finally(() => answered++),
    )
    const deadline = performance.now() + 20_000
    // Only the test's requests: readiness probes GET /health on its own.
    const arrived = () => backend.requests.filter((r) => r.target.includes('?i=')).length
    while (arrived() < IN_FLIGHT && performance.now() < deadline) await sleep(20)
    assert.equal(arrived(), IN_FLIGHT, 'every request reached the backend before the signal')
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    assert.equal(answered, 0, 'every request is still in flight when the signal is sent')
    process.kill(options.target === 'group' ? -pid : pid, options.signal)
    const results = await Promise.all(inFlight)
    const lost = results.filter((r) => r.status !== 200 || r.body !== '{"ok":true}')
    assert.deepEqual(lost, [], `${lost.length} of ${IN_FLIGHT} lost:\n${logs()}`)
    assert.equal(await exited, 0, logs())
    const gone = performance.now() + 10_000
    while (servers.some(alive) && performance.now() < gone) await sleep(50)
    assert.deepEqual(servers.filter(alive), [], 'every authgate process is gone')
    assert.doesNotMatch(logs(), /second signal: exiting now/)
  } finally {
    await agent.close()
    for (const p of [pid, ...servers]) if (alive(p)) process.kill(p, 'SIGKILL')
    await backend.close()
  }
}

const NPM_START = ['npm', 'start']
const NODE_BIN = [process.execPath, 'bin/authgate.js']

describe('graceful stop with requests in flight', { timeout: 240_000, concurrency: true }, () => {
  it('Ctrl-C on `npm start` (SIGINT to the process group: npm forwards it, node gets it twice)', () =>
    stopsGracefully(NPM_START, {}, { servers: 1, signal: 'SIGINT', target: 'group' }))

  it('systemd stop of `npm start` (SIGTERM to the process group)', () =>
    stopsGracefully(NPM_START, {}, { servers: 1, signal: 'SIGTERM', target: 'group' }))

  it('Ctrl-C on `node bin/authgate.js`', () =>
    stopsGracefully(NODE_BIN, {}, { servers: 1, signal: 'SIGINT', target: 'group' }))

  it('AUTHGATE_WORKERS=2: SIGTERM to the primary alone (the workers drain, the primary waits)', () =>
    stopsGracefully(NODE_BIN, { AUTHGATE_WORKERS: '2' }, { servers: 2, signal: 'SIGTERM', target: 'leader' }))

  it('AUTHGATE_WORKERS=2 under `npm start`: Ctrl-C to the process group', () =>
    stopsGracefully(NPM_START, { AUTHGATE_WORKERS: '2' }, { servers: 2, signal: 'SIGINT', target: 'group' }))
})
