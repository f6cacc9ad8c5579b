/**
 * What AUTHGATE_SESSION_REVALIDATE costs: each cookie session in use asks Supabase Auth `GET /user`
 * once per interval (docs/sessions.md). This measures that one request against the real Supabase
 * Auth (AUTHGATE_SUPABASE_AUTH_BIN, PostgreSQL as for the end-to-end suite):
 *   - its latency, one request at a time: what the request that triggers a revalidation waits;
 *   - how many Supabase Auth answers per second with `--concurrency` requests in flight: the
 *     capacity a fleet's revalidations share with everything else Supabase Auth does.
 * A deployment with N sessions in use asks N / interval of them per second (10,000 sessions at the
 * default minute: about 167/s). Never pass/fail: it prints figures.
 *
 *   AUTHGATE_SUPABASE_AUTH_BIN=... node bench/session-revalidate.ts [--requests 500] [--seconds 5] [--concurrency 8]
 */
import { parseArgs } from 'node:util'
import { startSupabaseAuth } from '../e2e/support/supabase-auth.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '8' },
  },
})

const { port, release } = await reservePort()
await release()
const backend = await startSupabaseAuth({
  publicUrl: `http://localhost:${port}/auth`,
  database: 'authgate_bench_revalidate',
})
try {
  const json = { 'content-type': 'application/json' }
  const credentials = JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'correct-horse-battery-5' })
  await (await fetch(`${backend.url}/signup`, { method: 'POST', headers: json, body: credentials })).text()
  const signIn = await fetch(`${backend.url}/token?grant_type=password`, {
    method: 'POST',
    headers: json,
    body: credentials,
  })
  const { access_token } = (await signIn.json()) as { access_token: string }
  const headers = { authorization: `Bearer ${access_token}`, accept: 'application/json' }
  const user = async () => {
    const res = await fetch(`${backend.url}/user`, { headers })
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`GET /user answered ${res.status}`)
  }

  // The machine's own state, for scale: `GET /health` answers without the database.
  const health = async () => void (await (await fetch(`${backend.url}/health`)).arrayBuffer())
  for (let i = 0; i < 50; i++) await user() // warm-up: connections, Go's and PostgreSQL's caches
  const baseline: number[] = []
  for (let i = 0; i < Number(values.requests); i++) {
    const start = performance.now()
    await health()
    baseline.push(performance.now() - start)
  }
  baseline.sort((a, b) => a - b)
  console.log(`GET /health, one at a time (${baseline.length}): p50 ${baseline[baseline.length >> 1]!.toFixed(2)} ms`)
  const times: number[] = []
  for (let i = 0; i < Number(values.requests); i++) {
    const start = performance.now()
    await user()
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(2)
  console.log(`GET /user, one at a time (${times.length}): p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms`)

  const until = performance.now() + Number(values.seconds) * 1000
  let done = 0
  await Promise.all(
    Array.from({ length: Number(values.concurrency) }, async () => {
      while (performance.now() < until) {
        await user()
        done++
      }
    }),
  )
  const perSecond = done / Number(values.seconds)
  console.log(`GET /user, ${values.concurrency} in flight for ${values.seconds} s: ${Math.round(perSecond)}/s`)
  for (const sessions of [1_000, 10_000, 100_000])
    console.log(
      `${sessions} sessions in use, revalidated every minute: ${(sessions / 60).toFixed(0)}/s, ${((100 * sessions) / 60 / perSecond).toFixed(1)} % of that`,
    )
} finally {
  await backend.stop()
}
