import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createConnection, createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export const SHARED_REDIS_URL = 'redis://127.0.0.1:6379'

/** A key prefix no other run shares, so tests never see each other's buckets on the shared Redis. */
export function uniquePrefix(label: string): string {
  return `authgate-test:${label}:${randomUUID()}:`
}

/** Sends PING on a raw socket; true when +PONG comes back within the timeout. */
export function pingRedis(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    const finish = (ok: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => finish(false), timeoutMs)
    socket.on('connect', () => socket.write('PING\r\n'))
    socket.on('data', (d) => finish(d.toString().startsWith('+PONG')))
    socket.on('error', () => finish(false))
  })
}

/** Why the shared-Redis tests cannot run, or undefined when they can. */
export async function sharedRedisSkipReason(): Promise<string | undefined> {
  return (await pingRedis(6379)) ? undefined : 'Redis is not reachable at 127.0.0.1:6379'
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
  #process: ChildProcess | undefined

  private constructor(port: number) {
    this.port = port
  }

  static async start(): Promise<ThrowawayRedis> {
    const redis = new ThrowawayRedis(await freePort())
    await redis.restart()
    return redis
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  /** Starts the server (again) on the same port and waits until it answers PING. */
  async restart(): Promise<void> {
    if (this.#process) throw new Error('already running')
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
      { stdio: 'ignore' },
    )
    this.#process = child
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined
    })
    for (let i = 0; i < 100; i++) {
      if (await pingRedis(this.port, 200)) return
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

  /** Freezes the server: connections stay open but nothing is answered (a hung Redis). */
  freeze(): void {
    this.#process?.kill('SIGSTOP')
  }

  thaw(): void {
    this.#process?.kill('SIGCONT')
  }
}
