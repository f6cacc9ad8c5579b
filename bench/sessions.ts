/**
 * What a cookie session costs on a protected route, against the same route with the bearer header:
 * requests per second of authgate (one Node process) answering a small JSON on
 *   - `bearer`: `Authorization: Bearer <token>`, verified locally (the protect plugin);
 *   - `cookie-memory`: the session cookie, the session in this process's memory (a lookup, an
 *     AES-GCM decryption, then the same verification);
 *   - `cookie-redis`: the same with the session in Redis (one GET per request; 127.0.0.1:6379).
 * The tokens are the real Supabase Auth's (AUTHGATE_SUPABASE_AUTH_BIN, PostgreSQL as for the
 * end-to-end suite). Load from wrk (one thread) in interleaved rounds, the machine being shared.
 * Never pass/fail: it prints figures.
 *
 *   AUTHGATE_SUPABASE_AUTH_BIN=... node bench/sessions.ts [--duration 5] [--connections 16] [--rounds 2]
 */
import { execFile, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify, parseArgs } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.ts'
import { parseBackendUrl } from '../src/config.ts'
import { defineRoute } from '../src/routes-dsl/index.ts'
import type { SessionOptions } from '../src/sessions/index.ts'
import { startSupabaseAuth } from '../e2e/support/supabase-auth.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '2' },
  },
})
if (spawnSync('which', ['wrk']).status !== 0) {
  console.error('wrk is required (apt-get install -y wrk)')
  process.exit(1)
}

const { port, release } = await reservePort()
const publicUrl = `http://localhost:${port}/auth`
const backend = await startSupabaseAuth({ publicUrl, database: 'authgate_bench_sessions' })
await release()
const key = { id: 'k1', key: randomBytes(32) }

async function instance(listenPort: number, store: SessionOptions['store']): Promise<FastifyInstance> {
  const app = await buildApp({
    config: { backendUrl: parseBackendUrl('bench', backend.url), prefix: '/auth' },
    rateLimit: false,
    logger: false,
    protect: { issuer: publicUrl },
    sessions: { mode: 'request', keys: [key], ...(store ? { store } : {}) },
  })
  app.route(defineRoute({ method: 'GET', url: '/bench/me', auth: 'required', handler: async () => ({ ok: true }) }))
  await app.listen({ port: listenPort, host: '127.0.0.1' })
  return app
}

const memory = await instance(port, undefined)
const redis = await instance(0, {
  kind: 'redis',
  url: 'redis://127.0.0.1:6379',
  keyPrefix: `authgate:bench-session:${Date.now()}:`,
  timeoutMs: 500,
})
const urlOf = (app: FastifyInstance) => `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

await fetch(`${urlOf(memory)}/auth/signup`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ email: 'bench-session@example.com', password: 'correct-horse-battery-1' }),
}).then((r) => r.arrayBuffer())
async function signIn(app: FastifyInstance, cookie: boolean): Promise<{ header: string }> {
  const res = await fetch(`${urlOf(app)}/auth/token?grant_type=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cookie ? { 'x-authgate-session': 'cookie' } : {}) },
    body: JSON.stringify({ email: 'bench-session@example.com', password: 'correct-horse-battery-1' }),
  })
  const body = (await res.json()) as { access_token?: string }
  return cookie
    ? { header: `Cookie: ${res.headers.get('set-cookie')!.split(';')[0]}` }
    : { header: `Authorization: Bearer ${body.access_token}` }
}
const cases = {
  bearer: { app: memory, ...(await signIn(memory, false)) },
  'cookie-memory': { app: memory, ...(await signIn(memory, true)) },
  'cookie-redis': { app: redis, ...(await signIn(redis, true)) },
}
for (const [name, c] of Object.entries(cases)) {
  const [h, v] = c.header.split(': ')
  const res = await fetch(`${urlOf(c.app)}/bench/me`, { headers: { [h!]: v! } })
  await res.arrayBuffer()
  if (res.status !== 200) throw new Error(`${name} answered ${res.status}`)
}

async function wrk(app: FastifyInstance, header: string): Promise<{ rps: number; p99: string; non2xx: number }> {
  const { stdout: out } = await promisify(execFile)(
    'wrk',
    ['-t1', `-c${values.connections}`, `-d${values.duration}s`, '--latency', '-H', header, `${urlOf(app)}/bench/me`],
    { encoding: 'utf8' },
  )
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p99: /99%\s+(\S+)/.exec(out)?.[1] ?? '?',
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
  }
}

const results: Record<string, number[]> = {}
const p99s: Record<string, string[]> = {}
for (let round = 0; round < Number(values.rounds); round++) {
  for (const [name, c] of Object.entries(cases)) {
    const r = await wrk(c.app, c.header)
    if (r.non2xx > 0) console.error(`warning: ${r.non2xx} non-2xx answers on ${name}`)
    ;(results[name] ??= []).push(r.rps)
    ;(p99s[name] ??= []).push(r.p99)
  }
}
console.log(`wrk -t1 -c${values.connections} -d${values.duration}s, ${values.rounds} rounds (best, p99 of each)`)
const best = (name: string) => Math.max(...results[name]!)
for (const name of Object.keys(cases)) {
  const ratio = (best(name) / best('bearer')).toFixed(2)
  console.log(
    `${name.padEnd(14)} ${best(name).toFixed(0).padStart(7)} req/s  (${ratio} of bearer)  p99 ${p99s[name]!.join(' / ')}`,
  )
}
await memory.close()
await redis.close()
await backend.stop()
