import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { Agent, createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { startGatewayProcess, type GatewayProcess } from './support/gateway-process.ts'
import { dropDatabase } from '../scripts/supabase-auth/postgres.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'

/**
 * The production recipe's topology (deploy/compose.yaml) as processes: three authgate replicas
 * sharing one Redis in front of the real Supabase Auth, behind a round-robin balancer that sends
 * the client's address in X-Forwarded-For and takes a replica out of rotation while its readiness
 * answers 503, as the recipe's HAProxy does (deploy/haproxy.cfg; HAProxy itself is not needed).
 */
// The Redis a developer's machine and CI run (the replicas keep to a key prefix of this run's).
const REDIS_URL = 'redis://127.0.0.1:6379'
const noRedis =
  spawnSync('redis-cli', ['-p', '6379', 'ping'], { encoding: 'utf8' }).stdout?.trim() === 'PONG'
    ? undefined
    : `no Redis answers at ${REDIS_URL} (Debian: apt-get install redis-server)`
const skip = (await backendUnavailableReason()) ?? noRedis ?? false

interface Balancer {
  url: string
  /** Requests each replica was given, by its URL. */
  served: Map<string, number>
  /** The replicas in rotation now. */
  ready(): string[]
  close(): Promise<void>
}

/** Round robin over the replicas whose /readyz answered 200 at the last check (every 200 ms). */
async function startBalancer(replicas: string[]): Promise<Balancer> {
  const inRotation = new Set(replicas)
  const served = new Map<string, number>()
  const agent = new Agent({ keepAlive: true })
  let turn = 0
  let checking = true
  const check = async () => {
    while (checking) {
      await Promise.all(
        replicas.map(async (replica) => {
          const up = await fetch(`${replica}/readyz`, { signal: AbortSignal.timeout(1_000) }).then(
            async (r) => (await r.body?.cancel(), r.status === 200),
            () => false,
          )
          if (up) inRotation.add(replica)
          else inRotation.delete(replica)
        }),
      )
      await sleep(200)
    }
  }
  const checks = check()
  const server: Server = createServer((req, res) => {
    const pool = replicas.filter((r) => inRotation.has(r))
    const target = pool[turn++ % Math.max(pool.length, 1)]
    if (target === undefined) return void res.writeHead(503).end()
    served.set(target, (served.get(target) ?? 0) + 1)
    const headers = { ...req.headers, 'x-forwarded-for': req.socket.remoteAddress ?? '' }
    const upstream = request(`${target}${req.url}`, { method: req.method, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502)
      res.end()
    })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served,
    ready: () => replicas.filter((r) => inRotation.has(r)),
    async close() {
      checking = false
      await checks
      agent.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('the production topology as processes: three replicas, one Redis, a balancer', { skip }, () => {
  const database = `authgate_topology_${process.pid}`
  let auth: SupabaseAuthServer
  let replicas: GatewayProcess[] = []
  let balancer: Balancer
  let publicPort: number

  before(async () => {
    const reservation = await reservePort()
    publicPort = reservation.port
    await reservation.release()
    const publicUrl = `http://localhost:${publicPort}/auth`
    auth = await startSupabaseAuth({ publicUrl, database, startupTimeoutMs: 180_000 })
    const env = {
      AUTHGATE_PUBLIC_URL: publicUrl,
      AUTHGATE_TRUSTED_PROXIES: '127.0.0.1',
      AUTHGATE_REDIS_URL: REDIS_URL,
      // This run's own keys in a Redis others may share.
      AUTHGATE_REDIS_KEY_PREFIX: `authgate-topology-${process.pid}:`,
      AUTHGATE_ACCOUNT_KEY_SECRET: 'topology-test-account-key-secret-0123456789',
      // A small limit on sign-in, so that one client's budget is quick to spend.
      AUTHGATE_RATE_LIMIT_ROUTES: 'POST /token=12/5m',
      AUTHGATE_SHUTDOWN_DELAY: '2s',
    }
    replicas = []
    for (let i = 0; i < 3; i++) {
      const port = await reservePort()
      await port.release()
      replicas.push(await startGatewayProcess({ port: port.port, backendUrl: auth.url, env, startupTimeoutMs: 60_000 }))
    }
    balancer = await startBalancer(replicas.map((r) => r.url))
  })

  after(async () => {
    await balancer?.close()
    for (const replica of replicas) await replica.stop()
    await auth?.stop()
    await dropDatabase(database).catch(() => undefined)
  })

  it("one client's sign-in budget is one budget, whichever replica each request reaches", async () => {
    const statuses: number[] = []
    for (let i = 0; i < 15; i++) {
      const response = await fetch(`${balancer.url}/auth/token?grant_type=password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // A different account each time: the per-account limit stays out of it.
        body: JSON.stringify({ email: `nobody-${i}@example.com`, password: 'wrong-password-1' }),
      })
      await response.body?.cancel()
      statuses.push(response.status)
    }
    assert.deepEqual([...balancer.served.values()].sort(), [5, 5, 5], 'every replica took its turn')
    assert.equal(statuses.filter((s) => s === 400).length, 12, statuses.join(' '))
    assert.deepEqual(statuses.slice(12), [429, 429, 429])
  })

  it('a replica stopped under load drains: no request fails, the balancer moves on', async () => {
    const [first] = replicas
    let stopping = true
    const failures: string[] = []
    let answered = 0
    const load = Array.from({ length: 4 }, async () => {
      while (stopping) {
        const response = await fetch(`${balancer.url}/auth/settings`).catch((e: Error) => e)
        if (response instanceof Error) failures.push(response.message)
        else {
          await response.body?.cancel()
          if (response.status === 200) answered++
          else failures.push(String(response.status))
        }
      }
    })
    let inRotation: string[]
    try {
      await sleep(500)
      await first!.stop()
      // Out of rotation within its shutdown delay, before it stopped listening.
      inRotation = balancer.ready()
      await sleep(500)
    } finally {
      stopping = false
      await Promise.all(load)
    }
    assert.deepEqual(inRotation, [replicas[1]!.url, replicas[2]!.url])
    assert.deepEqual(failures, [])
    assert.ok(answered > 20, `${answered} answers`)
  })
})
