import assert from 'node:assert/strict'
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { reservePort } from '../../scripts/supabase-auth/port.ts'
import { startFakeBackend } from '../support/fake-backend.ts'
import { plainEnvironment } from '../support/plain-environment.ts'
import { sharedRedisSkipReason } from '../ratelimit/support/redis.ts'

/**
 * The operators' dashboard (deploy/grafana/) and alert rules (deploy/prometheus/) against the
 * metrics authgate really exports: Prometheus (Debian's `prometheus` package) scrapes a running
 * authgate under a small load that makes every series exist (a per-account lockout, an exhausted
 * e-mail budget, a service route, unknown paths), every dashboard query and every rule expression is
 * evaluated through its HTTP API, and promtool runs the rules' unit tests. A query over a metric
 * name or label that authgate does not export returns nothing, and fails here.
 */
const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'authgate-dashboard.json')
const RULES = join(ROOT, 'deploy', 'prometheus', 'authgate-alerts.yaml')
const RULE_TESTS = join(ROOT, 'deploy', 'prometheus', 'authgate-alerts.test.yaml')

const missing = (command: string) => spawnSync(command, ['--version']).error !== undefined
const noPromtool = missing('promtool') ? 'needs promtool (apt-get install prometheus)' : undefined
const noPrometheus = missing('prometheus') ? 'needs prometheus (apt-get install prometheus)' : undefined
const noRedis = await sharedRedisSkipReason()

test('promtool: the alert rules are valid and their unit tests pass', { skip: noPromtool ?? false }, async () => {
  const checked = await run('promtool', ['check', 'rules', RULES])
  assert.match(checked.stdout, /SUCCESS: 6 rules found/)
  const tested = await run('promtool', ['test', 'rules', RULE_TESTS], { cwd: join(ROOT, 'deploy', 'prometheus') })
  assert.match(tested.stdout, /SUCCESS/)
})

/** Every PromQL expression of the dashboard's panels, with Grafana's interval variable resolved. */
function dashboardQueries(): Array<{ panel: string; expr: string }> {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: Array<{ title: string; type: string; targets?: Array<{ expr: string }> }>
  }
  return dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr.replaceAll('$__rate_interval', '30s') })),
  )
}

/** Each rule's expression, read from the rule file (block scalars folded as YAML folds them). */
function ruleExpressions(): Array<{ alert: string; expr: string }> {
  const text = readFileSync(RULES, 'utf8')
  const out: Array<{ alert: string; expr: string }> = []
  for (const m of text.matchAll(/- alert: (\w+)\n(?:\s+#.*\n)*\s+expr: (?:>-\n((?:\s{10}.*\n)+)|(.*)\n)/g))
    out.push({ alert: m[1]!, expr: (m[2] ?? m[3]!).trim().split(/\n\s*/).join(' ') })
  return out
}

test(
  'Prometheus scraping a loaded authgate: every dashboard query and every rule expression returns series',
  { skip: noPrometheus ?? noRedis ?? false, timeout: 180_000 },
  async (t) => {
    const queries = dashboardQueries()
    const rules = ruleExpressions()
    assert.equal(rules.length, 6, 'every rule of the file is read')
    assert.ok(queries.length >= 17, `${queries.length} queries`)

    // Supabase Auth's stand-in: every password sign-in is refused (so the per-account limit counts it).
    const backend = await startFakeBackend((req, res) => {
      const refused = req.url?.startsWith('/token') === true
      // And reading the user fails on its side: a 5xx for the error ratio.
      const failing = req.url === '/user'
      res.writeHead(refused ? 400 : failing ? 500 : 200, { 'content-type': 'application/json' })
      res.end(refused ? '{"code":400,"error_code":"invalid_credentials","msg":"Invalid login credentials"}' : '{}')
    })
    t.after(() => backend.close())
    const dir = mkdtempSync(join(tmpdir(), 'authgate-monitoring-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))

    const authgatePort = await reservePort()
    await authgatePort.release()
    const origin = `http://127.0.0.1:${authgatePort.port}`
    const authgate = spawn(process.execPath, [join(ROOT, 'bin', 'authgate.js')], {
      env: plainEnvironment({
        PORT: String(authgatePort.port),
        HOST: '127.0.0.1',
        AUTHGATE_BACKEND_URL: backend.url,
        AUTHGATE_REDIS_URL: 'redis://127.0.0.1:6379',
        AUTHGATE_REDIS_KEY_PREFIX: `authgate-monitoring-${process.pid}-${Date.now()}:`,
        AUTHGATE_ACCOUNT_KEY_SECRET: 'monitoring-test-account-key-secret-0123456789',
        AUTHGATE_ACCOUNT_RATE_LIMIT: '2/15m',
        AUTHGATE_EMAIL_BUDGET: '2',
        AUTHGATE_REST_URL: `${backend.url}/rest`,
        AUTHGATE_REALTIME_URL: `${backend.url}/realtime`,
        AUTHGATE_LOG_LEVEL: 'warn',
      }),
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let log = ''
    authgate.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')))
    t.after(() => stop(authgate))
    await waitFor(
      async () => (await fetch(`${origin}/livez`).catch(() => undefined))?.status === 200,
      () => log,
    )

    const promPort = await reservePort()
    await promPort.release()
    const prometheusUrl = `http://127.0.0.1:${promPort.port}`
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: ['${RULES}']`,
        'scrape_configs:',
        '  - job_name: authgate',
        `    static_configs: [{ targets: ['127.0.0.1:${authgatePort.port}'] }]`,
        '',
      ].join('\n'),
    )
    const prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${promPort.port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    )
    let promLog = ''
    prometheus.stderr?.on('data', (chunk: Buffer) => (promLog = (promLog + chunk.toString('utf8')).slice(-5000)))
    t.after(() => stop(prometheus))

    // The small load, over and over while Prometheus scrapes: a forwarded route, refused sign-ins on
    // one account (its limit of 2 then answers 429), e-mails past the budget of 2, a sign-out, a
    // service route, and a path nothing serves.
    let loading = true
    const load = (async () => {
      let round = 0
      while (loading) {
        round++
        await oneRound(round).catch((error: unknown) => {
          // Once the test is over, authgate stops under it: that is no failure.
          if (loading) throw error
        })
      }
    })()
    async function oneRound(round: number) {
      {
        const post = (path: string, body: unknown) =>
          fetch(origin + path, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          }).then((r) => r.body?.cancel())
        await fetch(`${origin}/auth/settings`).then((r) => r.body?.cancel())
        await post('/auth/token?grant_type=password', { email: 'victim@example.com', password: `guess-${round}` })
        await post('/auth/otp', { email: `otp-${round}@example.com` })
        await post('/auth/logout', {})
        await fetch(`${origin}/rest/v1/todos`, { headers: { apikey: 'anon' } }).then((r) => r.body?.cancel())
        await fetch(`${origin}/no-such-path`).then((r) => r.body?.cancel())
        await fetch(`${origin}/auth/user`, { headers: { authorization: 'Bearer a.b.c' } }).then((r) => r.body?.cancel())
        await sleep(300)
      }
    }
    t.after(async () => {
      loading = false
      await load
    })

    const query = async (expr: string) => {
      const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)
      const body = (await response.json()) as { status: string; error?: string; data?: { result: unknown[] } }
      assert.equal(body.status, 'success', `${expr}: ${body.error ?? ''}`)
      return body.data!.result
    }
    await waitFor(
      async () => (await fetch(`${prometheusUrl}/-/ready`).catch(() => undefined))?.status === 200,
      () => promLog,
    )

    // Each query returns series once Prometheus has scraped twice in its window: waited for, not timed.
    const empty = async (exprs: Array<{ name: string; expr: string }>) => {
      const left: string[] = []
      for (const { name, expr } of exprs) if ((await query(expr)).length === 0) left.push(`${name}: ${expr}`)
      return left
    }
    const panels = queries.map((q) => ({ name: q.panel, expr: q.expr }))
    // A rule's whole expression holds only while it fires; each metric it reads must exist now.
    const selectors = rules.flatMap((r) =>
      [...r.expr.matchAll(/authgate_[a-z_]+(?:\{[^}]*\})?/g)].map((m) => ({ name: r.alert, expr: m[0] })),
    )
    let left: string[] = []
    for (let attempt = 0; attempt < 60; attempt++) {
      left = await empty([...panels, ...selectors])
      if (left.length === 0) break
      await sleep(1000)
    }
    assert.deepEqual(left, [], 'queries with no series')
    for (const rule of rules) await query(rule.expr)
    process.stdout.write(
      `# evaluated ${panels.length} dashboard queries and ${rules.length} rule expressions (${selectors.length} metric selectors): all return series\n`,
    )

    // Prometheus loaded the rule file, and every rule evaluates without error.
    const loaded = (await (await fetch(`${prometheusUrl}/api/v1/rules`)).json()) as {
      data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> }
    }
    const states = loaded.data.groups.flatMap((g) => g.rules)
    assert.deepEqual(states.map((r) => r.name).sort(), rules.map((r) => r.alert).sort())
    await waitFor(
      async () => {
        const again = (await (await fetch(`${prometheusUrl}/api/v1/rules`)).json()) as typeof loaded
        return again.data.groups.flatMap((g) => g.rules).every((r) => r.health === 'ok')
      },
      () => JSON.stringify(states),
    )
    loading = false
    await load
  },
)

async function waitFor(check: () => Promise<boolean>, output: () => string): Promise<void> {
  for (let i = 0; i < 240; i++) {
    if (await check().catch(() => false)) return
    await sleep(250)
  }
  assert.fail(`not ready within 60 s:\n${output()}`)
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await Promise.race([exited, sleep(20_000)])
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}
