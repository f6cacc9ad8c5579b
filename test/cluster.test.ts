import assert from 'node:assert/strict'
import { LIMITABLE_ROUTES } from '../src/auth/routes/index.ts'
import { spawn } from 'node:child_process'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { adoptPrimarySecret, WORKER_ACCOUNT_SECRET, workerEnvFor } from '../src/cluster.ts'
import { AuthgateConfigError } from '../src/config.ts'
import { loadAccountLimits } from '../src/ratelimit/abuse-config.ts'
import { SCRAPE_REUSE_MS } from '../src/observability/cluster-metrics.ts'
import { loadWorkerCount as workerCount } from '../src/settings.ts'
import { startFakeBackend, type FakeBackend } from './support/fake-backend.ts'

describe('AUTHGATE_WORKERS', () => {
  it('defaults to 1, takes a count or auto', () => {
    assert.equal(workerCount({}), 1)
    assert.equal(workerCount({ AUTHGATE_WORKERS: '3' }), 3)
    assert.ok(workerCount({ AUTHGATE_WORKERS: 'auto' }) >= 1)
    for (const bad of ['0', '-1', 'two', '1.5', '1000'])
      assert.throws(() => workerCount({ AUTHGATE_WORKERS: bad }), AuthgateConfigError, bad)
  })
})

describe("the primary's account-key secret", () => {
  it('is handed to the workers when none is configured, and taken out of their environment', () => {
    const primary = { accounts: loadAccountLimits({}, LIMITABLE_ROUTES) }
    const env: NodeJS.ProcessEnv = { ...workerEnvFor(primary) }
    const worker = { accounts: loadAccountLimits({}, LIMITABLE_ROUTES) }
    assert.notEqual(worker.accounts.secret, primary.accounts.secret)
    adoptPrimarySecret(worker, env)
    assert.equal(worker.accounts.secret, primary.accounts.secret)
    assert.equal(env[WORKER_ACCOUNT_SECRET], undefined)
    // A configured secret is every process's already; no limits, nothing to hand.
    const configured = {
      accounts: loadAccountLimits({ AUTHGATE_ACCOUNT_KEY_SECRET: 's'.repeat(32) }, LIMITABLE_ROUTES),
    }
    assert.deepEqual(workerEnvFor(configured), {})
    adoptPrimarySecret(configured, { [WORKER_ACCOUNT_SECRET]: 'other' })
    assert.equal(configured.accounts.secret, 's'.repeat(32))
    assert.deepEqual(workerEnvFor({ accounts: undefined }), {})
  })
})

/** One request on its own connection, so that the cluster hands each to the next worker. */
function get(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('two workers', () => {
  let backend: FakeBackend
  before(async () => {
    backend = await startFakeBackend()
  })
  after(() => backend.close())

  it('share one rate-limit budget (the store the primary owns) and stop on SIGTERM', async () => {
    const child = spawn(process.execPath, ['src/main.ts'], {
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        AUTHGATE_WORKERS: '2',
        AUTHGATE_BACKEND_URL: backend.url,
        AUTHGATE_LOG_LEVEL: 'info',
        AUTHGATE_RATE_LIMITED_ROUTES: 'none',
        AUTHGATE_RATE_LIMIT_ROUTES: 'GET /health=5/1m',
        AUTHGATE_OPENAPI_PATH: 'off',
        AUTHGATE_DOCS_PATH: 'off',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (out += c.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      // Both workers listen on the one port the primary holds. Two processes loading the service on a
      // loaded two-core machine can take a while: the deadline only bounds a hang.
      const deadline = Date.now() + 90_000
      let port: number | undefined
      while (Date.now() < deadline) {
        const ports = [...out.matchAll(/Server listening at http:\/\/127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1]))
        if (ports.length >= 2) {
          assert.equal(new Set(ports).size, 1)
          port = ports[0]
          break
        }
        await new Promise((r) => setTimeout(r, 50))
      }
      assert.ok(port, `workers did not start:\n${out}`)

      const statuses: number[] = []
      for (let i = 0; i < 20; i++) statuses.push(await get(port, '/auth/health'))
      assert.equal(statuses.filter((s) => s === 200).length, 5, String(statuses))
      assert.equal(statuses.filter((s) => s === 429).length, 15, String(statuses))

      // The requests were served by both workers, not one.
      const pids = new Set<number>()
      for (const line of out.split('\n')) {
        if (!line.includes('"msg":"request"')) continue
        pids.add((JSON.parse(line) as { pid: number }).pid)
      }
      assert.equal(pids.size, 2, out)
    } finally {
      child.kill('SIGTERM')
    }
    assert.equal(await exited, 0)
  })
})

/** A password sign-in on its own connection; resolves to the status. */
function signIn(port: number, clientIp: string, password = `guess-${clientIp}`): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ email: 'victim@example.com', password })
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/auth/token?grant_type=password',
        agent: false,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': clientIp },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

describe('two workers without Redis or a configured key secret', () => {
  it('count one account as one: exactly 10 failed sign-ins, whichever worker serves them', async () => {
    // Wrong passwords are refused as Supabase Auth refuses them; the owner's is accepted.
    const backend = await startFakeBackend((req, res, body) => {
      if (req.url!.startsWith('/token') && !body.toString().includes('owner-password')) {
        res.writeHead(400, { 'content-type': 'application/json', 'x-sb-error-code': 'invalid_credentials' })
        res.end('{"code":400,"error_code":"invalid_credentials","msg":"Invalid login credentials"}')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    })
    const child = spawn(process.execPath, ['src/main.ts'], {
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        AUTHGATE_WORKERS: '2',
        AUTHGATE_BACKEND_URL: backend.url,
        AUTHGATE_TRUSTED_PROXIES: '127.0.0.1/32',
        AUTHGATE_OPENAPI_PATH: 'off',
        AUTHGATE_DOCS_PATH: 'off',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (out += c.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      const deadline = Date.now() + 90_000
      const ready = () => out.split('\n').filter((l) => l.includes('"msg":"authgate ready"'))
      while (ready().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      assert.equal(ready().length, 2, `workers did not start:\n${out}`)
      const port = Number(new URL((JSON.parse(ready()[0]!) as { address: string }).address).port)
      const statuses: number[] = []
      const owner: number[] = []
      for (let i = 0; i < 24; i++) {
        statuses.push(await signIn(port, `198.51.100.${i + 1}`))
        // The owner signs in between the guesses: each success gives its unit back, on whichever worker.
        if (i % 3 === 0) owner.push(await signIn(port, '203.0.113.9', 'owner-password'))
      }
      const pids = new Set(
        out
          .split('\n')
          .filter((l) => l.includes('"msg":"request"') || l.includes('"url":"/auth/token'))
          .map((l) => (JSON.parse(l) as { pid: number }).pid),
      )
      console.log(
        `2 workers, no Redis, no AUTHGATE_ACCOUNT_KEY_SECRET: ${statuses.filter((s) => s === 400).length} of 24 guesses reached the backend`,
      )
      assert.equal(statuses.filter((s) => s === 400).length, 10, String(statuses))
      assert.equal(statuses.filter((s) => s === 429).length, 14, String(statuses))
      // The owner got in each time before the tenth failure, and was refused with everyone after it.
      assert.deepEqual(owner, [200, 200, 200, 429, 429, 429, 429, 429])
      assert.equal(backend.requests.filter((r) => r.target.startsWith('/token')).length, 13)
      assert.equal(pids.size, 2, 'both workers served sign-ins')
    } finally {
      child.kill('SIGTERM')
      await exited
      await backend.close()
    }
  })
})

/** The sum of a counter's samples whose labels include `labels`. */
function total(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}

function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString()))
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode}: ${body}`))))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('two workers, one scrape', () => {
  it('any worker answers for both; counters never go backwards, not even when a worker is replaced', async () => {
    const backend = await startFakeBackend()
    const child = spawn(process.execPath, ['src/main.ts'], {
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        AUTHGATE_WORKERS: '2',
        AUTHGATE_BACKEND_URL: backend.url,
        AUTHGATE_CACHE_TTL: '0',
        AUTHGATE_OPENAPI_PATH: 'off',
        AUTHGATE_DOCS_PATH: 'off',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (out += c.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    const ready = (): Array<{ pid: number; address: string }> =>
      out
        .split('\n')
        .filter((l) => l.includes('"msg":"authgate ready"'))
        .map((l) => JSON.parse(l) as { pid: number; address: string })
    const waitReady = async (n: number) => {
      const deadline = Date.now() + 90_000
      while (ready().length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      assert.ok(ready().length >= n, `workers did not start:\n${out}`)
    }
    try {
      await waitReady(2)
      const port = Number(new URL(ready()[0]!.address).port)
      for (let i = 0; i < 4; i++) assert.equal(await get(port, '/auth/health'), 200)
      const seen: number[] = []
      for (let i = 0; i < 4; i++) {
        const text = await scrape(port)
        seen.push(total(text, 'authgate_http_requests_total', { route: '/auth/health', status: '200' }))
        assert.equal(total(text, 'authgate_dependency_up', { dependency: 'supabase_auth' }), 1, 'up is not summed')
      }
      assert.deepEqual(seen, [4, 4, 4, 4], 'every scrape counts the requests of both workers')
      // One collection answers the scrapes of the next second (SCRAPE_REUSE_MS): a later one counts the scrapes above.
      await new Promise((r) => setTimeout(r, SCRAPE_REUSE_MS + 100))
      const metricsScrapes = total(await scrape(port), 'authgate_http_requests_total', { route: '/metrics' })
      assert.ok(metricsScrapes >= 4, `scrapes counted on both workers: ${metricsScrapes}`)

      // A worker dies and is replaced: its counts stay in the sum.
      process.kill(ready()[0]!.pid, 'SIGKILL')
      await waitReady(3)
      for (let i = 0; i < 4; i++) {
        const text = await scrape(port)
        const n = total(text, 'authgate_http_requests_total', { route: '/auth/health', status: '200' })
        assert.ok(n >= 4, `went backwards to ${n}`)
      }
    } finally {
      child.kill('SIGTERM')
      await exited
      await backend.close()
    }
  })
})
