import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { setTimeout as sleep } from 'node:timers/promises'

/** A redis-server of a test's own: on loopback only, keeping nothing on disk, in the foreground. */
export const THROWAWAY_SERVER_ARGS: readonly string[] = [
  '--bind',
  '127.0.0.1',
  '--save',
  '',
  '--appendonly',
  'no',
  '--daemonize',
  'no',
]

export const SHARED_REDIS_URL = 'redis://127.0.0.1:6379'

/** A key prefix no other run shares, so tests never see each other's buckets on the shared Redis. */
export function uniquePrefix(label: string): string {
  return `authgate-test:${label}:${randomUUID()}:`
}

/** Sends PING on a raw socket (TLS when a CA is given); true when +PONG comes back within the timeout. */
export function pingRedis(port: number, timeoutMs = 500, tlsCa?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket =
      tlsCa === undefined
        ? createConnection({ host: '127.0.0.1', port })
        : tlsConnect({ host: '127.0.0.1', port, ca: tlsCa })
    const finish = (ok: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => finish(false), timeoutMs)
    socket.on(tlsCa === undefined ? 'connect' : 'secureConnect', () => socket.write('PING\r\n'))
    socket.on('data', (d) => finish(d.toString().startsWith('+PONG')))
    socket.on('error', () => finish(false))
  })
}

/** Certificate files for a TLS redis-server (paths), and the CA's PEM text to trust it. */
export interface RedisTlsFiles {
  cert: string
  key: string
  ca: string
  caPem: string
}

/**
 * Why the shared-Redis tests cannot run, or undefined when they can. The shared server answers every
 * engineer's and suite's tests on the machine: on a loaded machine a PING has taken over half a
 * second (a CI run skipped a whole suite for it), so it gets five seconds before Redis counts as absent.
 */
export async function sharedRedisSkipReason(): Promise<string | undefined> {
  return (await pingRedis(6379, 5_000)) ? undefined : 'Redis is not reachable at 127.0.0.1:6379'
}

export function redisServerSkipReason(): string | undefined {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' })
  return r.status === 0 ? undefined : 'redis-server binary not found (needed for the outage tests)'
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

/**
 * A redis-server of our own on a free port, to stop, freeze and restart at will. The shared one on
 * 6379 is never touched. Only the process this helper started is ever signalled, by its pid.
 */
export class ThrowawayRedis {
  readonly port: number
  /** Its own working directory (removed by `remove`). */
  readonly dir: string
  readonly #tls: RedisTlsFiles | undefined
  #process: ChildProcess | undefined

  private constructor(port: number, tls: RedisTlsFiles | undefined) {
    this.port = port
    this.#tls = tls
    this.dir = mkdtempSync(join(tmpdir(), 'authgate-redis-'))
  }

  /** With `tls`, the port speaks TLS only (no plain port). */
  static async start(options: { tls?: RedisTlsFiles } = {}): Promise<ThrowawayRedis> {
    const redis = new ThrowawayRedis(await freePort(), options.tls)
    await redis.restart()
    return redis
  }

  get url(): string {
    return `${this.#tls ? 'rediss' : 'redis'}://127.0.0.1:${this.port}`
  }

  /** Starts the server (again) on the same port and waits until it answers PING. */
  async restart(): Promise<void> {
    if (this.#process) throw new Error('already running')
    const tls = this.#tls
    const listen = tls
      ? ['--port', '0', '--tls-port', String(this.port), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key]
      : ['--port', String(this.port)]
    const child = spawn(
      'redis-server',
      [
        ...listen,
        ...(tls ? ['--tls-ca-cert-file', tls.ca, '--tls-auth-clients', 'no'] : []),
        ...THROWAWAY_SERVER_ARGS,
        '--dir',
        this.dir,
      ],
      { stdio: 'ignore' },
    )
    this.#process = child
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined
    })
    for (let i = 0; i < 100; i++) {
      if (await pingRedis(this.port, 200, tls?.caPem)) return
      await sleep(50)
    }
    throw new Error(`throwaway redis-server on ${this.port} did not start`)
  }

  /** Kills the server (connections drop at once) and waits for it to be gone. */
  async stop(): Promise<void> {
    const child = this.#process
    if (!child) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGCONT') // a frozen process must run to die promptly
    child.kill('SIGKILL')
    await exited
    this.#process = undefined
  }

  /** Stops the server and removes its directory. */
  async remove(): Promise<void> {
    await this.stop()
    rmSync(this.dir, { recursive: true, force: true })
  }

  /** Freezes the server: connections stay open but nothing is answered (a hung Redis). */
  freeze(): void {
    this.#process?.kill('SIGSTOP')
  }

  thaw(): void {
    this.#process?.kill('SIGCONT')
  }
}
