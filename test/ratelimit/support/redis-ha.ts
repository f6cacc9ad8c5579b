/**
 * Highly available Redis made of real processes, for failover tests: a primary with a replica and
 * three sentinels, or a three-primary Cluster with a replica each. Everything runs in a temporary
 * directory of its own on free ports; only processes started here are ever signalled, by pid.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pingRedis, THROWAWAY_SERVER_ARGS } from './redis.ts'

export function sentinelSkipReason(): string | undefined {
  for (const bin of ['redis-server', 'redis-sentinel', 'redis-cli']) {
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8' })
    if (r.status !== 0) return `${bin} not found (Debian: apt-get install redis-server redis-sentinel)`
  }
  return undefined
}

async function portFree(port: number): Promise<boolean> {
  const server = createServer()
  return new Promise((resolve) => {
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** Ports handed out by this process (with their bus ports): two deployments may be started at once. */
const handedOut = new Set<number>()

/** A free port whose cluster bus port (+10000) is free too. */
async function freePorts(count: number, withBus = false): Promise<number[]> {
  const out: number[] = []
  while (out.length < count) {
    const port = 20000 + Math.floor(Math.random() * 25000)
    const taken = () => handedOut.has(port) || (withBus && handedOut.has(port + 10000))
    if (taken()) continue
    if (!(await portFree(port))) continue
    if (withBus && !(await portFree(port + 10000))) continue
    if (taken()) continue
    handedOut.add(port)
    if (withBus) handedOut.add(port + 10000)
    out.push(port)
  }
  return out
}

/** redis-cli against one port; the reply as text. */
export function redisCli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr}`)
  return r.stdout.trim()
}

class Processes {
  readonly dir = mkdtempSync(join(tmpdir(), 'authgate-redis-ha-'))
  readonly #running = new Map<number, ChildProcess>()

  start(bin: string, args: string[], port: number): void {
    const child = spawn(bin, args, { cwd: this.dir, stdio: 'ignore' })
    this.#running.set(port, child)
    child.once('exit', () => {
      if (this.#running.get(port) === child) this.#running.delete(port)
    })
  }

  async waitUp(port: number): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if (await pingRedis(port, 200)) return
      await sleep(50)
    }
    throw new Error(`redis on ${port} did not start`)
  }

  /** SIGKILL: the process is gone at once, as in a crash. */
  async kill(port: number): Promise<void> {
    const child = this.#running.get(port)
    if (!child) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.#running.keys()].map((p) => this.kill(p)))
    rmSync(this.dir, { recursive: true, force: true })
  }
}

const SERVER_ARGS = [
  ...THROWAWAY_SERVER_ARGS,
  // A replica's first sync starts at once: by default a primary waits 5 s for more replicas to
  // share it, which each start would spend waiting.
  '--repl-diskless-sync-delay',
  '0',
]

export class SentinelSet {
  readonly master = 'authgate-test'
  readonly processes: Processes
  readonly primary: number
  readonly replica: number
  readonly sentinels: number[]

  private constructor(processes: Processes, primary: number, replica: number, sentinels: number[]) {
    this.processes = processes
    this.primary = primary
    this.replica = replica
    this.sentinels = sentinels
  }

  /** One primary, one replica, three sentinels (quorum 2) that fail over within about 2 s. */
  static async start(): Promise<SentinelSet> {
    const processes = new Processes()
    const [primary, replica, ...sentinels] = await freePorts(5)
    processes.start('redis-server', ['--port', String(primary), ...SERVER_ARGS], primary!)
    await processes.waitUp(primary!)
    processes.start(
      'redis-server',
      ['--port', String(replica), ...SERVER_ARGS, '--replicaof', '127.0.0.1', String(primary)],
      replica!,
    )
    await processes.waitUp(replica!)
    const set = new SentinelSet(processes, primary!, replica!, sentinels)
    for (const port of sentinels) {
      const conf = join(processes.dir, `sentinel-${port}.conf`)
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${processes.dir}`,
          `sentinel monitor ${set.master} 127.0.0.1 ${primary} 2`,
          `sentinel down-after-milliseconds ${set.master} 1000`,
          `sentinel failover-timeout ${set.master} 5000`,
          `sentinel parallel-syncs ${set.master} 1`,
          '',
        ].join('\n'),
      )
      processes.start('redis-sentinel', [conf], port)
    }
    for (const port of sentinels) await processes.waitUp(port)
    // Every sentinel knows the replica and the other sentinels before a failover is asked of them.
    const deadline = performance.now() + 30_000
    for (;;) {
      const ready = sentinels.every((port) => {
        const info = redisCli(port, 'SENTINEL', 'MASTER', set.master)
        const field = (name: string) => {
          const lines = info.split('\n')
          return lines[lines.indexOf(name) + 1]
        }
        return field('num-slaves') === '1' && field('num-other-sentinels') === '2'
      })
      if (ready) break
      if (performance.now() > deadline) throw new Error('the sentinels did not discover each other in 30 s')
      await sleep(200)
    }
    return set
  }

  get url(): string {
    return `redis+sentinel://${this.sentinels.map((p) => `127.0.0.1:${p}`).join(',')}/${this.master}`
  }

  /** The port of the primary the sentinels currently name. */
  currentPrimary(): number {
    const [, port] = redisCli(this.sentinels[0]!, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.master).split('\n')
    return Number(port)
  }

  killPrimary(): Promise<void> {
    return this.processes.kill(this.primary)
  }

  stop(): Promise<void> {
    return this.processes.stopAll()
  }
}

export class RedisCluster {
  readonly processes: Processes
  readonly ports: number[]

  private constructor(processes: Processes, ports: number[]) {
    this.processes = processes
    this.ports = ports
  }

  /** Six nodes: three primaries, a replica each; a node is failed over 1 s after it stops answering. */
  static async start(): Promise<RedisCluster> {
    const processes = new Processes()
    const ports = await freePorts(6, true)
    for (const port of ports) {
      processes.start(
        'redis-server',
        [
          '--port',
          String(port),
          ...SERVER_ARGS,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '1000',
          '--dir',
          processes.dir,
        ],
        port,
      )
    }
    for (const port of ports) await processes.waitUp(port)
    const r = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
      { encoding: 'utf8' },
    )
    if (r.status !== 0) throw new Error(`redis-cli --cluster create failed: ${r.stdout}${r.stderr}`)
    const cluster = new RedisCluster(processes, ports)
    await cluster.waitHealthy()
    // A primary can only be failed over once its replica has synced.
    const deadline = performance.now() + 30_000
    while (
      !cluster
        .primaries()
        .every(
          (p) =>
            /connected_slaves:1/.test(redisCli(p, 'INFO', 'replication')) &&
            /state=online/.test(redisCli(p, 'INFO', 'replication')),
        )
    ) {
      if (performance.now() > deadline) throw new Error('the replicas did not sync in 30 s')
      await sleep(200)
    }
    return cluster
  }

  get url(): string {
    return `redis+cluster://${this.ports
      .slice(0, 3)
      .map((p) => `127.0.0.1:${p}`)
      .join(',')}`
  }

  /** Waits until every running node says the cluster is ok. */
  async waitHealthy(skip: number[] = []): Promise<void> {
    const deadline = performance.now() + 30_000
    for (;;) {
      const ok = this.ports
        .filter((p) => !skip.includes(p))
        .every((p) => {
          try {
            return redisCli(p, 'CLUSTER', 'INFO').includes('cluster_state:ok')
          } catch {
            return false
          }
        })
      if (ok) return
      if (performance.now() > deadline) throw new Error('the cluster did not become healthy in 30 s')
      await sleep(200)
    }
  }

  /** The ports of the nodes that are primaries now (CLUSTER NODES as a running node sees it). */
  primaries(from: number = this.ports[0]!): number[] {
    return redisCli(from, 'CLUSTER', 'NODES')
      .split('\n')
      .map((line) => line.split(' '))
      .filter((f) => f[2]!.includes('master') && !f[2]!.includes('fail'))
      .map((f) => Number(/:(\d+)@/.exec(f[1]!)![1]))
  }

  kill(port: number): Promise<void> {
    return this.processes.kill(port)
  }

  stop(): Promise<void> {
    return this.processes.stopAll()
  }
}
