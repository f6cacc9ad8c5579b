/** Two replicas in two processes, one Redis: one budget per client and route, over real HTTP. */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { RedisStore } from '../../src/ratelimit/redis-store.ts'
import { SHARED_REDIS_URL, sharedRedisSkipReason, uniquePrefix } from './support/redis.ts'

const SERVER = fileURLToPath(new URL('./support/server.ts', import.meta.url))

async function startReplica(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [SERVER], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout! })
  const [first] = (await Promise.race([once(lines, 'line'), once(child, 'exit').then(() => ['{}'])])) as [string]
  const { port } = JSON.parse(first) as { port?: number }
  if (!port) throw new Error('replica did not start')
  return { child, base: `http://127.0.0.1:${port}` }
}

describe('two authgate replicas sharing Redis', { skip: await sharedRedisSkipReason() }, () => {
  const prefix = uniquePrefix('replicas')
  const replicas: { child: ChildProcess; base: string }[] = []
  before(async () => {
    const env = {
      AUTHGATE_REDIS_URL: SHARED_REDIS_URL,
      AUTHGATE_REDIS_KEY_PREFIX: prefix,
      AUTHGATE_RATE_LIMIT: '4/1h',
      TEST_TRUST_PROXY: '127.0.0.1',
    }
    replicas.push(...(await Promise.all([startReplica(env), startReplica(env)])))
  })
  after(async () => {
    for (const { child } of replicas) {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await once(child, 'exit')
      }
    }
    const store = new RedisStore({ url: SHARED_REDIS_URL, keyPrefix: '', timeoutMs: 500 })
    await store.ready(2000)
    const keys = await store.client.keys(`${prefix}*`)
    if (keys.length) await store.client.del(...keys)
    await store.close()
  })

  const post = (replica: number, client: string) =>
    fetch(`${replicas[replica]!.base}/signup`, { method: 'POST', headers: { 'x-forwarded-for': client } })

  it('enforce one budget per client and route across both processes', async () => {
    const statuses = []
    for (let i = 0; i < 6; i++) statuses.push((await post(i % 2, '198.51.100.20')).status)
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429])
    const denied = await post(1, '198.51.100.20')
    assert.equal(denied.status, 429)
    const retryAfter = Number(denied.headers.get('retry-after'))
    assert.ok(retryAfter > 880 && retryAfter <= 900, `Retry-After ${retryAfter}`)
    assert.equal(denied.headers.get('ratelimit'), `"default";r=0;t=${retryAfter}`)
  })

  it('give another client (behind the trusted proxy) its own budget on either replica', async () => {
    assert.equal((await post(0, '198.51.100.21')).status, 200)
    const res = await post(1, '198.51.100.21')
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('ratelimit'), '"default";r=2;t=900')
  })
})
