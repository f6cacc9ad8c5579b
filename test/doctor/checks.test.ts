import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadCoreConfig } from '../../src/config.ts'
import { backendPerHour, isSecretKey, PROBE_MAX, runChecks, type DoctorInput } from '../../src/doctor/checks.ts'
import { formatFindings, hasError, type Finding } from '../../src/doctor/findings.ts'
import { runDoctor } from '../../src/doctor/run.ts'
import { loadPublicUrl, loadRateLimitSettings } from '../../src/settings.ts'

type Route = (path: string, init: { method?: string; headers?: Record<string, string> }) => Response | Promise<Response>

const NOW = Date.parse('2026-01-01T00:00:00Z')
const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', date: new Date(NOW).toUTCString(), ...headers },
  })

/** A Supabase Auth stand-in answering as configured, called the way the one client is. */
function backend(url: string, route: Route): DoctorInput['backend'] {
  const base = new URL(url)
  return {
    url: base,
    resolve: (path) => new URL(base.pathname.replace(/\/$/, '') + path, base.origin),
    fetch: async (target, init = {}) => {
      const u = new URL(String(target))
      const headers: Record<string, string> = {}
      new Headers(init.headers).forEach((v, k) => (headers[k] = v))
      // The client IP of the request's identity, as the one client sends it (test/core/backend-identity.test.ts).
      if (init.identity?.clientIp !== undefined) headers['x-forwarded-for'] = init.identity.clientIp
      return route(u.pathname.slice(base.pathname.replace(/\/$/, '').length) + u.search, {
        method: init.method,
        headers,
      })
    },
  }
}

const healthy: Route = (path, init) => {
  if (path === '/health') return json({ name: 'GoTrue', version: 'v2.0.0' })
  if (path === '/settings') return json({ external: { email: true, github: true }, mailer_autoconfirm: false })
  if (path === '/.well-known/jwks.json') return json({ keys: [{ alg: 'ES256' }] })
  if (path === '/.well-known/openid-configuration') return json({ issuer: 'https://api.example.com/auth' })
  if (path.startsWith('/authorize'))
    return new Response(null, {
      status: 302,
      headers: { location: 'https://github.com/login?redirect_uri=https%3A%2F%2Fapi.example.com%2Fauth%2Fcallback' },
    })
  if (path === '/otp' && init.method === 'POST') return json({ code: 400 }, 400)
  return json({}, 404)
}

function input(over: Partial<DoctorInput> & { env?: Record<string, string> } = {}): DoctorInput {
  const env = over.env ?? {}
  return {
    config: loadCoreConfig(env),
    rateLimit: loadRateLimitSettings(env),
    publicUrl: 'https://api.example.com/auth',
    backend: backend('http://127.0.0.1:9999', healthy),
    probe: false,
    now: () => NOW,
    ...over,
  }
}

const find = (findings: Finding[], check: string) => findings.find((f) => f.check === check)!

describe('authgate doctor checks', () => {
  it('passes a healthy backend, and prints one line per finding', async () => {
    const findings = await runChecks(input())
    assert.equal(hasError(findings), false, formatFindings(findings))
    assert.equal(find(findings, 'backend').message, 'GoTrue v2.0.0 at http://127.0.0.1:9999')
    assert.equal(find(findings, 'links').status, 'ok')
    assert.equal(find(findings, 'client-ip').status, 'info')
    assert.match(formatFindings(findings), /^ok {5}backend/m)
    assert.match(formatFindings(findings), /0 error\(s\)/)
  })

  it('reports an unreachable backend with its setting and still checks the local settings', async () => {
    const findings = await runChecks(
      input({
        backend: backend('http://127.0.0.1:9', () => {
          throw new Error('connect ECONNREFUSED')
        }),
      }),
    )
    assert.deepEqual(
      findings.map((f) => [f.check, f.status]),
      [
        ['backend', 'error'],
        ['apikey', 'ok'],
        ['cors', 'info'],
      ],
    )
    assert.equal(find(findings, 'backend').fix, 'AUTHGATE_BACKEND_URL')
  })

  it('names the key a gateway wants, a wrong URL, a skewed clock and an empty key set', async () => {
    const withKey = await runChecks(
      input({ backend: backend('http://127.0.0.1:9999', () => json({ message: 'No API key' }, 401)) }),
    )
    assert.equal(find(withKey, 'backend').fix, 'AUTHGATE_BACKEND_APIKEY')
    assert.equal(find(withKey, 'settings').status, 'error')
    assert.equal(find(withKey, 'keys').status, 'error')
    const notAuth = await runChecks(
      input({ backend: backend('http://127.0.0.1:9999', () => new Response('<html>', { status: 200 })) }),
    )
    assert.match(find(notAuth, 'backend').message, /not Supabase Auth's health document/)
    assert.equal(find(notAuth, 'clock').status, 'warn')
    const skewed = await runChecks(input({ now: () => NOW + 90_000 }))
    assert.equal(find(skewed, 'clock').status, 'error')
    assert.match(find(skewed, 'clock').message, /90 s ahead/)
    const empty = await runChecks(
      input({
        backend: backend('http://127.0.0.1:9999', (p, i) =>
          p === '/.well-known/jwks.json' ? json({ keys: [] }) : healthy(p, i),
        ),
      }),
    )
    assert.equal(find(empty, 'keys').status, 'warn')
  })

  it('checks issuer and callback against the public URL, or says it cannot', async () => {
    const none = await runChecks(input({ publicUrl: undefined }))
    assert.equal(find(none, 'issuer').fix, 'AUTHGATE_PUBLIC_URL (e.g. https://api.example.com/auth)')
    const wrong = await runChecks(input({ publicUrl: 'https://auth.example.org/v1' }))
    assert.equal(find(wrong, 'issuer').fix, 'GOTRUE_JWT_ISSUER=https://auth.example.org/v1')
    assert.match(
      find(wrong, 'links').fix!,
      /^API_EXTERNAL_URL=https:\/\/auth\.example\.org\/v1 and GOTRUE_EXTERNAL_GITHUB_REDIRECT_URI=/,
    )
    const noProvider = await runChecks(
      input({
        backend: backend('http://127.0.0.1:9999', (p, i) =>
          p === '/settings' ? json({ external: { email: true } }) : healthy(p, i),
        ),
      }),
    )
    assert.equal(find(noProvider, 'links').status, 'info')
    const noRedirect = await runChecks(
      input({
        backend: backend('http://127.0.0.1:9999', (p, i) =>
          p.startsWith('/authorize')
            ? json({}, 400)
            : p === '/.well-known/openid-configuration'
              ? json({}, 404)
              : healthy(p, i),
        ),
      }),
    )
    assert.equal(find(noRedirect, 'links').status, 'warn')
    assert.equal(find(noRedirect, 'issuer').status, 'warn')
  })

  it('probes from made-up addresses whether Supabase Auth tells clients apart', async () => {
    const seen = new Map<string, number>()
    let limit = 3
    let perClient = true
    const limiting: Route = (path, init) => {
      if (path !== '/otp') return healthy(path, init)
      const ip = init.headers?.['x-forwarded-for'] ?? ''
      assert.match(ip, /^198\.(18|19)\.\d+\.\d+$/)
      const key = perClient ? ip : 'everyone'
      seen.set(key, (seen.get(key) ?? 0) + 1)
      return json({}, seen.get(key)! > limit ? 429 : 400)
    }
    const ok = await runChecks(input({ probe: true, backend: backend('http://127.0.0.1:9999', limiting) }))
    assert.equal(find(ok, 'client-ip').status, 'ok')
    assert.match(find(ok, 'client-ip').message, /refused after 3 requests/)
    // authgate's default lets 30 through at once, more than the backend's 3.
    assert.equal(find(ok, 'limits').status, 'warn')
    perClient = false
    seen.clear()
    const one = await runChecks(input({ probe: true, backend: backend('http://127.0.0.1:9999', limiting) }))
    assert.equal(find(one, 'client-ip').status, 'error')
    limit = PROBE_MAX + 10
    seen.clear()
    const unlimited = await runChecks(input({ probe: true, backend: backend('http://127.0.0.1:9999', limiting) }))
    assert.equal(find(unlimited, 'client-ip').fix, 'GOTRUE_RATE_LIMIT_HEADER=X-Forwarded-For')
  })

  it('judges the hosted apikey and the client-IP header together', async () => {
    const hosted = (env: Record<string, string>) =>
      runChecks(input({ env, backend: backend('https://abc.supabase.co/auth/v1', healthy) }))
    assert.equal(find(await hosted({}), 'apikey').status, 'error')
    assert.equal(find(await hosted({ AUTHGATE_BACKEND_APIKEY: 'sb_publishable_x' }), 'apikey').status, 'info')
    const publishable = await hosted({
      AUTHGATE_BACKEND_APIKEY: 'sb_publishable_x',
      AUTHGATE_CLIENT_IP_HEADER: 'Sb-Forwarded-For',
    })
    assert.equal(find(publishable, 'apikey').status, 'error')
    const secret = await hosted({
      AUTHGATE_BACKEND_APIKEY: 'sb_secret_x',
      AUTHGATE_CLIENT_IP_HEADER: 'Sb-Forwarded-For',
    })
    assert.equal(find(secret, 'apikey').status, 'ok')
    const selfHosted = await runChecks(input({ env: { AUTHGATE_CLIENT_IP_HEADER: 'Sb-Forwarded-For' } }))
    assert.equal(find(selfHosted, 'apikey').fix, 'GOTRUE_SECURITY_SB_FORWARDED_FOR_ENABLED=true')
    const serviceRole = `x.${Buffer.from(JSON.stringify({ role: 'service_role' })).toString('base64url')}.y`
    assert.equal(isSecretKey(serviceRole), true)
    assert.equal(isSecretKey('x.bm90IGpzb24.y'), false)
    assert.equal(isSecretKey('plain'), false)
    assert.equal(isSecretKey(undefined), false)
  })

  it('flags missing budgets and per-account limits, a random key secret beside Redis, and CORS for any origin', async () => {
    const findings = await runChecks(
      input({
        env: {
          AUTHGATE_EMAIL_BUDGET: 'off',
          AUTHGATE_REDIS_URL: 'redis://127.0.0.1:6379',
          AUTHGATE_CORS_ORIGINS: '*',
        },
        backend: backend('http://127.0.0.1:9999', (p, i) =>
          p === '/settings' ? json({ external: {}, mailer_autoconfirm: true }) : healthy(p, i),
        ),
      }),
    )
    const budgets = findings.filter((f) => f.check === 'budgets')
    assert.deepEqual(
      budgets.map((f) => f.status),
      ['warn', 'info', 'info'],
    )
    assert.equal(find(findings, 'accounts').fix, 'AUTHGATE_ACCOUNT_KEY_SECRET (the same on every replica)')
    assert.equal(find(findings, 'cors').status, 'warn')
    const off = await runChecks(input({ rateLimit: undefined }))
    assert.equal(find(off, 'limits').status, 'warn')
  })

  it("measures the budgets against Supabase Auth's own where given, and says not verified otherwise", async () => {
    const budgets = async (backendEnv: Record<string, string> | undefined, env: Record<string, string> = {}) =>
      (await runChecks(input({ env, backendEnv }))).filter((f) => f.check === 'budgets')
    const blind = await budgets(undefined)
    assert.deepEqual(
      blind.map((f) => f.status),
      ['info', 'info'],
    )
    assert.match(
      blind[0]!.message,
      /AUTHGATE_EMAIL_BUDGET=30 assumes Supabase Auth's GOTRUE_RATE_LIMIT_EMAIL_SENT=30: not verified/,
    )
    assert.equal(blind[1]!.fix, "GOTRUE_RATE_LIMIT_SMS_SENT in the doctor's environment, as Supabase Auth has it")
    const lower = await budgets({ GOTRUE_RATE_LIMIT_EMAIL_SENT: '5', GOTRUE_RATE_LIMIT_SMS_SENT: '30/1h' })
    assert.deepEqual(
      lower.map((f) => [f.status, f.fix]),
      [
        ['warn', 'AUTHGATE_EMAIL_BUDGET=5'],
        ['ok', undefined],
      ],
    )
    assert.match(lower[0]!.message, /authgate lets more through than Supabase Auth sends/)
    assert.match(lower[1]!.message, /^SMS: AUTHGATE_SMS_BUDGET=30 matches GOTRUE_RATE_LIMIT_SMS_SENT=30\/1h/)
    const higher = await budgets({ GOTRUE_RATE_LIMIT_EMAIL_SENT: '100', GOTRUE_RATE_LIMIT_SMS_SENT: '10/5m' })
    assert.match(higher[0]!.message, /authgate refuses messages Supabase Auth would send/)
    assert.equal(higher[0]!.fix, 'AUTHGATE_EMAIL_BUDGET=100')
    assert.match(higher[1]!.message, /is not a count per hour/)
    assert.equal((await budgets({ GOTRUE_RATE_LIMIT_EMAIL_SENT: ' ' }))[0]!.status, 'info')
    assert.equal(backendPerHour('30.0'), 30)
    assert.equal(backendPerHour('12/60m'), 12)
    assert.equal(backendPerHour('lots'), undefined)
  })

  it('warns of a random key secret with more than one worker, not with one process alone', async () => {
    const two = find(await runChecks(input({ workers: 2 })), 'accounts')
    assert.equal(two.status, 'warn')
    assert.match(two.message, /the 2 workers share the primary's, but a restart forgets/)
    const one = find(await runChecks(input({ workers: 1 })), 'accounts')
    assert.equal(one.status, 'ok')
    assert.match(
      one.message,
      /^per account: (.*, )?POST \/token 10\/15m failed, .*; a browser with the account's device cookie 5\/15m of its own$/,
    )
    const noDevice = find(await runChecks(input({ env: { AUTHGATE_ACCOUNT_DEVICE_COOKIE: 'off' } })), 'accounts')
    assert.match(noDevice.message, /no device cookies .*: strangers can lock an account out$/)
    const noToken = input({ env: { AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /token=off' } })
    assert.match(find(await runChecks(noToken), 'accounts').message, /password sign-in not limited per account/)
    const configured = input({ workers: 2, env: { AUTHGATE_ACCOUNT_KEY_SECRET: 's'.repeat(32) } })
    assert.equal(find(await runChecks(configured), 'accounts').status, 'ok')
  })
})

describe('authgate doctor command', () => {
  it('refuses an unknown argument with status 2', async () => {
    let out = ''
    const status = await runDoctor(
      ['--jsn'],
      { core: loadCoreConfig({}), rateLimit: undefined, publicUrl: undefined },
      (t) => (out += t),
    )
    assert.equal(status, 2)
    assert.match(out, /unknown argument "--jsn"/)
  })

  it('reads AUTHGATE_PUBLIC_URL and refuses what is no http(s) URL', () => {
    assert.equal(
      loadPublicUrl({ AUTHGATE_PUBLIC_URL: 'https://api.example.com/auth/' }),
      'https://api.example.com/auth',
    )
    assert.equal(loadPublicUrl({}), undefined)
    assert.throws(() => loadPublicUrl({ AUTHGATE_PUBLIC_URL: 'nope' }), /AUTHGATE_PUBLIC_URL/)
    assert.throws(() => loadPublicUrl({ AUTHGATE_PUBLIC_URL: 'ftp://x/' }), /http or https/)
  })
})

describe('authgate doctor output', () => {
  it('prints text or JSON and exits 1 on an error; logs warnings and errors at start-up', async (t) => {
    const { startFakeBackend } = await import('../support/fake-backend.ts')
    const { logStartupFindings } = await import('../../src/doctor/run.ts')
    const fake = await startFakeBackend((req, res) => {
      res.writeHead(req.url === '/health' ? 200 : 404, { 'content-type': 'application/json' })
      res.end(req.url === '/health' ? '{"name":"GoTrue","version":"v2"}' : '{}')
    })
    t.after(() => fake.close())
    const settings = {
      core: loadCoreConfig({ AUTHGATE_BACKEND_URL: fake.url }),
      rateLimit: loadRateLimitSettings({}),
      publicUrl: 'http://localhost:8080/auth',
    }
    let text = ''
    assert.equal(await runDoctor(['--no-probe'], settings, (s) => (text += s)), 1)
    assert.match(text, /^ERROR {2}settings/m)
    let out = ''
    assert.equal(await runDoctor(['--json', '--no-probe'], settings, (s) => (out += s)), 1)
    const report = JSON.parse(out) as { ok: boolean; findings: Finding[] }
    assert.equal(report.ok, false)
    // Every finding has the four documented members; an ok one's fix is null.
    for (const f of report.findings) assert.deepEqual(Object.keys(f), ['check', 'status', 'message', 'fix'])
    assert.equal(report.findings.find((f) => f.status === 'ok')?.fix, null)
    const logged: Array<[string, unknown, string]> = []
    await logStartupFindings(settings, {
      warn: (o: unknown, m?: string) => void logged.push(['warn', o, m ?? '']),
      error: (o: unknown, m?: string) => void logged.push(['error', o, m ?? '']),
    } as never)
    assert.ok(logged.some(([level, o]) => level === 'error' && (o as { check: string }).check === 'settings'))
    assert.ok(logged.every(([, , m]) => m.startsWith('doctor: ')))
  })
})
