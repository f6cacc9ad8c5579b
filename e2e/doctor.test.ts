import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import type { Finding } from '../src/doctor/findings.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url))
// Where clients would reach authgate: nothing listens there, the doctor only compares against it.
const PUBLIC_URL = 'http://localhost:47001/auth'

/** `authgate doctor` run as an operator runs it: configured by its environment. */
function doctor(
  backend: SupabaseAuthServer,
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ status: number; stdout: string }> {
  const child = spawn(process.execPath, [MAIN, 'doctor', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      AUTHGATE_BACKEND_URL: backend.url,
      AUTHGATE_PUBLIC_URL: PUBLIC_URL,
      AUTHGATE_CORS_ORIGINS: 'http://localhost:3000',
      AUTHGATE_LOG_LEVEL: 'warn',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')))
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) =>
      stderr && code === null ? reject(new Error(stderr)) : resolve({ status: code ?? -1, stdout }),
    )
  })
}

const byCheck = (findings: Finding[], check: string) => findings.filter((f) => f.check === check)

// Supabase Auth's own per-IP limit on POST /otp at its default (30 per 5 minutes, 30 at once): the
// probe needs a limit to meet.
const OWN_OTP_LIMIT = { GOTRUE_RATE_LIMIT_OTP: '30' }
const BACKEND_EMAIL_BUDGET = 5

describe('authgate doctor against the real Supabase Auth', { skip: unavailable }, () => {
  let good: SupabaseAuthServer
  let bad: SupabaseAuthServer

  before(async () => {
    good = await startSupabaseAuth({
      publicUrl: PUBLIC_URL,
      database: 'authgate_e2e_doctor_good',
      // An e-mail budget below authgate's default (30), which Supabase Auth publishes nowhere.
      extraEnv: { ...OWN_OTP_LIMIT, GOTRUE_RATE_LIMIT_EMAIL_SENT: String(BACKEND_EMAIL_BUDGET) },
    })
    // What goes wrong behind a proxy: the external URL without authgate's prefix (links and the
    // provider callback built from it), the issuer left at it, and no header named for the client IP.
    bad = await startSupabaseAuth({
      publicUrl: PUBLIC_URL,
      database: 'authgate_e2e_doctor_bad',
      extraEnv: {
        ...OWN_OTP_LIMIT,
        API_EXTERNAL_URL: 'http://localhost:9999',
        GOTRUE_JWT_ISSUER: 'http://localhost:9999',
        GOTRUE_EXTERNAL_GITHUB_REDIRECT_URI: 'http://localhost:9999/callback',
        GOTRUE_RATE_LIMIT_HEADER: '',
      },
    })
  })
  after(async () => {
    await good?.stop()
    await bad?.stop()
  })

  it('finds nothing wrong with a correctly configured Supabase Auth, and exits 0', async (t) => {
    const text = await doctor(good, [])
    t.diagnostic(`authgate doctor (correct):\n${text.stdout}`)
    assert.equal(text.status, 0, text.stdout)
    const json = await doctor(good, ['--json', '--no-probe'])
    assert.equal(json.status, 0)
    const report = JSON.parse(json.stdout) as { ok: boolean; findings: Finding[] }
    assert.equal(report.ok, true)
    assert.match(byCheck(report.findings, 'backend')[0]!.message, /^GoTrue .* at http:\/\/127\.0\.0\.1:\d+$/)
    assert.equal(byCheck(report.findings, 'issuer')[0]!.status, 'ok')
    assert.equal(byCheck(report.findings, 'links')[0]!.status, 'ok')
    assert.equal(byCheck(report.findings, 'clock')[0]!.status, 'ok')
    assert.equal(byCheck(report.findings, 'keys')[0]!.status, 'ok')
    assert.match(
      text.stdout,
      /ok\s+client-ip\s+Supabase Auth limits per client IP from X-Forwarded-For: one address was refused after \d+ requests/,
    )
  })

  it('names the wrong external URL, issuer and missing client-IP header with their fixes, and exits 1', async (t) => {
    const text = await doctor(bad, [])
    t.diagnostic(`authgate doctor (misconfigured):\n${text.stdout}`)
    assert.equal(text.status, 1, text.stdout)
    const json = await doctor(bad, ['--json'])
    assert.equal(json.status, 1)
    const report = JSON.parse(json.stdout) as { ok: boolean; findings: Finding[] }
    assert.equal(report.ok, false)
    const issuer = byCheck(report.findings, 'issuer')[0]!
    assert.equal(issuer.status, 'error')
    assert.equal(issuer.fix, `GOTRUE_JWT_ISSUER=${PUBLIC_URL}`)
    const links = byCheck(report.findings, 'links')[0]!
    assert.equal(links.status, 'error')
    assert.match(links.fix!, new RegExp(`^API_EXTERNAL_URL=${PUBLIC_URL}`))
    const ip = byCheck(report.findings, 'client-ip')[0]!
    assert.equal(ip.status, 'warn')
    assert.equal(ip.fix, 'GOTRUE_RATE_LIMIT_HEADER=X-Forwarded-For')
  })

  it("checks the budgets against Supabase Auth's own when given them, and says when it could not", async (t) => {
    // Not given: the doctor cannot see GOTRUE_RATE_LIMIT_EMAIL_SENT=5 and says so, never "ok".
    const blind = JSON.parse((await doctor(good, ['--json', '--no-probe'])).stdout) as { findings: Finding[] }
    const email = byCheck(blind.findings, 'budgets')[0]!
    assert.equal(email.status, 'info')
    assert.match(email.message, /^e-mail: AUTHGATE_EMAIL_BUDGET=30 assumes .*: not verified/)
    // Every finding has the members docs/doctor.md documents; `fix` is null where nothing needs fixing.
    for (const f of blind.findings) assert.deepEqual(Object.keys(f), ['check', 'status', 'message', 'fix'])
    assert.equal(byCheck(blind.findings, 'backend')[0]!.fix, null)
    // Given as Supabase Auth has it: measured against authgate's, with the fix.
    const told = await doctor(good, ['--no-probe'], { GOTRUE_RATE_LIMIT_EMAIL_SENT: String(BACKEND_EMAIL_BUDGET) })
    t.diagnostic(
      told.stdout
        .split('\n')
        .filter((l) => /budgets|fix: /.test(l))
        .join('\n'),
    )
    assert.match(
      told.stdout,
      /WARN\s+budgets\s+e-mail: AUTHGATE_EMAIL_BUDGET=30 but Supabase Auth's GOTRUE_RATE_LIMIT_EMAIL_SENT=5: authgate lets more through/,
    )
    assert.match(told.stdout, /fix: AUTHGATE_EMAIL_BUDGET=5/)
    const matched = await doctor(good, ['--json', '--no-probe'], {
      GOTRUE_RATE_LIMIT_EMAIL_SENT: '5',
      AUTHGATE_EMAIL_BUDGET: '5',
    })
    const ok = byCheck((JSON.parse(matched.stdout) as { findings: Finding[] }).findings, 'budgets')[0]!
    assert.equal(ok.status, 'ok')
    assert.match(ok.message, /matches GOTRUE_RATE_LIMIT_EMAIL_SENT=5/)
  })
})
