/**
 * What protecting a route costs: requests per second of authgate (one Node process, so one core
 * for the JavaScript) answering the same small JSON on routes that
 *   - check nothing (`open`),
 *   - verify the Supabase Auth access token locally (`verified`: ES256 signature, claims; the same
 *     token on every request, so with the verified-token cache on it costs a lookup),
 *   - the same with the cache off (`verified-no-cache`, a second app on its own port: every
 *     request checks the signature),
 *   - verify it and check the session with the cached `GET /user` (`session`, 10 s TTL),
 *   - call Supabase Auth's `GET /user` on every request, as teams without local verification do
 *     (`get-user`).
 * The token is minted by the real Supabase Auth (AUTHGATE_SUPABASE_AUTH_BIN, PostgreSQL as for the
 * end-to-end suite). Load comes from wrk (one thread) in rounds, interleaved, since this machine is
 * shared. Never pass/fail: it prints figures.
 *
 *   AUTHGATE_SUPABASE_AUTH_BIN=... node bench/protect.ts [--duration 5] [--connections 16] [--rounds 2]
 */
import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { parseArgs } from 'node:util'
import { buildApp } from '../src/app.ts'
import { parseBackendUrl } from '../src/config.ts'
import { defineRoute } from '../src/routes-dsl/index.ts'
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
const backend = await startSupabaseAuth({ publicUrl, database: 'authgate_bench_protect' })
await release()
const backendUrl = new URL(backend.url)
const app = await buildApp({
  config: { backendUrl: parseBackendUrl('bench', backend.url), prefix: '/auth' },
  rateLimit: false,
  logger: false,
  protect: { issuer: publicUrl, sessionCheck: true },
})
const body = { ok: true }
app.route(defineRoute({ method: 'GET', url: '/bench/open', handler: async () => body }))
app.route(defineRoute({ method: 'GET', url: '/bench/verified', auth: 'required', handler: async () => body }))
app.route(defineRoute({ method: 'GET', url: '/bench/session', auth: { session: true }, handler: async () => body }))
app.route(
  defineRoute({
    method: 'GET',
    url: '/bench/get-user',
    handler: async (request, reply) => {
      const res = await fetch(`${backendUrl.href.replace(/\/$/, '')}/user`, {
        headers: { authorization: request.headers.authorization ?? '' },
      })
      await res.arrayBuffer()
      if (res.status !== 200) return reply.code(401).send({ ok: false })
      return body
    },
  }),
)
await app.listen({ port, host: '127.0.0.1' })

// The same verification with the verified-token cache off, on a port of its own.
const noCache = await buildApp({
  config: { backendUrl: parseBackendUrl('bench', backend.url), prefix: '/auth' },
  rateLimit: false,
  logger: false,
  protect: { issuer: publicUrl, tokenCache: false },
})
noCache.route(defineRoute({ method: 'GET', url: '/bench/verified', auth: 'required', handler: async () => body }))
await noCache.listen({ port: 0, host: '127.0.0.1' })
const noCachePort = (noCache.server.address() as { port: number }).port
const target = (route: string) =>
  route === 'verified-no-cache'
    ? `http://127.0.0.1:${noCachePort}/bench/verified`
    : `http://127.0.0.1:${port}/bench/${route}`

const signup = await fetch(`http://127.0.0.1:${port}/auth/signup`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ email: 'bench@example.com', password: 'correct-horse-battery-1' }),
})
const { access_token: token } = (await signup.json()) as { access_token: string }

// Each route must answer 200 with the token, or the figures mean nothing.
for (const route of ['open', 'verified', 'verified-no-cache', 'session', 'get-user']) {
  const res = await fetch(target(route), { headers: { authorization: `Bearer ${token}` } })
  await res.arrayBuffer()
  if (res.status !== 200) throw new Error(`/bench/${route} answered ${res.status}`)
}

// Asynchronous: the server runs in this process and must keep serving while wrk runs.
async function wrk(route: string): Promise<{ rps: number; p99: string; non2xx: number }> {
  const { stdout: out } = await promisify(execFile)(
    'wrk',
    [
      '-t1',
      `-c${values.connections}`,
      `-d${values.duration}s`,
      '--latency',
      '-H',
      `Authorization: Bearer ${token}`,
      target(route),
    ],
    { encoding: 'utf8' },
  )
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN)
  const p99 = /99%\s+(\S+)/.exec(out)?.[1] ?? '?'
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  return { rps, p99, non2xx }
}

const routes = ['open', 'verified', 'verified-no-cache', 'session', 'get-user'] as const
const results: Record<string, number[]> = Object.fromEntries(routes.map((r) => [r, []]))
const p99s: Record<string, string[]> = Object.fromEntries(routes.map((r) => [r, []]))
for (let round = 0; round < Number(values.rounds); round++) {
  for (const route of routes) {
    const r = await wrk(route)
    if (r.non2xx > 0) console.error(`warning: ${r.non2xx} non-2xx answers on ${route}`)
    results[route]!.push(r.rps)
    p99s[route]!.push(r.p99)
  }
}
console.log(`wrk -t1 -c${values.connections} -d${values.duration}s, ${values.rounds} rounds (best, p99 of each)`)
const best = (r: string) => Math.max(...results[r]!)
for (const route of routes) {
  const ratio = (best(route) / best('open')).toFixed(2)
  console.log(
    `${route.padEnd(17)} ${best(route).toFixed(0).padStart(7)} req/s  (${ratio} of open)  p99 ${p99s[route]!.join(' / ')}`,
  )
}
console.log(`GET /user calls made by the session check: ${app.authgateProtect!.sessions!.calls}`)
const cache = app.authgateProtect!.verifier.cache!
console.log(`verified-token cache: ${cache.hits} hits, ${cache.misses} misses, ${cache.size} entries`)
await app.close()
await noCache.close()
await backend.stop()
