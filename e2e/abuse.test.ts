import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { SHARED_REDIS_URL, sharedRedisSkipReason, uniquePrefix } from '../test/ratelimit/support/redis.ts'
import { startGatewayProcess, type GatewayProcess } from './support/gateway-process.ts'
import { postgresTarget, runPsql } from '../scripts/supabase-auth/postgres.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'

const unavailable = (await backendUnavailableReason()) ?? (await sharedRedisSkipReason())

const PASSWORD = 'correct-horse-battery-5'
const ACCOUNT = 'guessed@example.com'
const VICTIM = 'victim@example.com'
const RECOVERY_USERS = Array.from({ length: 40 }, (_, i) => `recover-${i}@example.com`)
/** Supabase Auth's e-mail budget (GOTRUE_RATE_LIMIT_EMAIL_SENT), mirrored by AUTHGATE_EMAIL_BUDGET. */
const BACKEND_EMAILS_PER_HOUR = 10

/**
 * Two authgate replicas sharing one Redis in front of one Supabase Auth that sends e-mail (sign-ups
 * are not confirmed automatically, so its e-mail budget applies; with no SMTP host its mailer
 * discards the mail) and limits per client IP from X-Forwarded-For. The test's loopback connection
 * is the trusted proxy that names each client.
 */
describe('abuse protection in front of the real Supabase Auth', { skip: unavailable }, () => {
  let backend: SupabaseAuthServer
  const gateways: GatewayProcess[] = []
  let env: Record<string, string> = {}

  before(async () => {
    const first = await reservePort()
    const second = await reservePort()
    backend = await startSupabaseAuth({
      publicUrl: `http://localhost:${first.port}/auth`,
      database: 'authgate_e2e_abuse',
      extraEnv: {
        GOTRUE_MAILER_AUTOCONFIRM: 'false',
        GOTRUE_RATE_LIMIT_EMAIL_SENT: String(BACKEND_EMAILS_PER_HOUR),
        // Its own per-IP limit on POST /verify at the default: 30 at once per client IP.
        GOTRUE_RATE_LIMIT_VERIFY: '30',
      },
    })
    env = {
      AUTHGATE_TRUSTED_PROXIES: '127.0.0.1/32,::1/128',
      AUTHGATE_REDIS_URL: SHARED_REDIS_URL,
      AUTHGATE_REDIS_KEY_PREFIX: uniquePrefix('e2e-abuse'),
      // Counts are asserted exactly: a take that outlived the 100 ms default on a loaded machine would be
      // let through by the failure policy (open) and read as a limit that failed.
      AUTHGATE_REDIS_TIMEOUT: '5s',
      AUTHGATE_ACCOUNT_KEY_SECRET: 'e2e-abuse-secret-of-at-least-32-characters',
      AUTHGATE_EMAIL_BUDGET: String(BACKEND_EMAILS_PER_HOUR),
      AUTHGATE_BUDGET_CLIENT_SHARE: '50%',
      // The per-IP limits out of the way of what is shown: /recover generous, /verify left to Supabase Auth.
      AUTHGATE_RATE_LIMIT_ROUTES: 'POST /recover=1000/5m,POST /verify=off',
    }
    try {
      for (const port of [first, second]) {
        await port.release()
        gateways.push(await startGatewayProcess({ port: port.port, backendUrl: backend.url, env }))
      }
    } catch (error) {
      for (const g of gateways) await g.stop()
      await backend.stop()
      throw error
    }
    // Confirmed users made through the admin API: no e-mail is sent for them.
    for (const email of [ACCOUNT, VICTIM, ...RECOVERY_USERS]) {
      const response = await fetch(`${backend.url}/admin/users`, {
        method: 'POST',
        headers: { authorization: `Bearer ${backend.serviceRoleJwt()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD, email_confirm: true }),
      })
      assert.equal(response.status, 200, await response.text())
    }
  })

  after(async () => {
    for (const g of gateways) await g.stop()
    await backend?.stop()
  })

  it('logs what `authgate doctor` finds at start-up, with the setting that fixes it', async () => {
    // These replicas are not told their public URL: the issuer cannot be checked.
    const deadline = Date.now() + 10_000
    while (!gateways[0]!.logs().includes('doctor: ') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100))
    const line = gateways[0]!
      .logs()
      .split('\n')
      .find((l) => l.includes('AUTHGATE_PUBLIC_URL is not set'))
    assert.ok(line, gateways[0]!.logs())
    const entry = JSON.parse(line) as { level: number; check: string; fix: string }
    assert.equal(entry.check, 'issuer')
    assert.equal(entry.level, 40)
    assert.match(entry.fix, /^AUTHGATE_PUBLIC_URL/)
  })

  const post = (replica: number, path: string, body: unknown, clientIp: string) =>
    fetch(`${gateways[replica % gateways.length]!.url}/auth${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': clientIp },
      body: JSON.stringify(body),
    })

  it('limits 31 password attempts on one account from 31 client IPs across two replicas', async (t) => {
    const answers: Array<{ status: number; code: string; policy: string | null }> = []
    for (let i = 0; i < 31; i++) {
      const response = await post(
        i,
        '/token?grant_type=password',
        { email: ACCOUNT, password: `guess-${i}-wrong` },
        `198.51.100.${i + 1}`,
      )
      const body = (await response.json()) as { error_code?: string }
      answers.push({
        status: response.status,
        code: body.error_code ?? '',
        policy: response.headers.get('ratelimit-policy'),
      })
    }
    const reachedBackend = answers.filter((a) => a.status === 400)
    const refused = answers.filter((a) => a.status === 429)
    t.diagnostic(
      `31 attempts: ${reachedBackend.length} answered by Supabase Auth (invalid_credentials), ${refused.length} refused by authgate's per-account limit`,
    )
    assert.equal(reachedBackend.length, 10)
    assert.ok(reachedBackend.every((a) => a.code === 'invalid_credentials'))
    assert.equal(refused.length, 21)
    assert.ok(refused.every((a) => a.code === 'over_request_rate_limit' && a.policy === '"account";q=10;w=900'))
    // Redis holds the account's bucket under an HMAC: no address in any key or value.
    const { Redis } = await import('ioredis')
    const redis = new Redis(SHARED_REDIS_URL)
    try {
      const keys = await redis.keys(`${env.AUTHGATE_REDIS_KEY_PREFIX}*`)
      const accountKeys = keys.filter((k) => k.includes('acct|/token|'))
      assert.equal(accountKeys.length, 1, keys.join(' '))
      assert.match(accountKeys[0]!, /acct\|\/token\|[A-Za-z0-9_-]{22}$/)
      const values = await Promise.all(keys.map((k) => redis.get(k)))
      assert.ok(![...keys, ...values].some((v) => v?.includes('example.com')))
    } finally {
      redis.disconnect()
    }
    // The account is held, not the addresses: another account from the same addresses goes through.
    const other = await post(
      0,
      '/token?grant_type=password',
      { email: RECOVERY_USERS[0], password: PASSWORD },
      '198.51.100.31',
    )
    assert.equal(other.status, 200)
  })

  it('lets the victim in past a targeted lock-out: failures counted, not attempts, and its device cookie', async (t) => {
    const signIn = async (replica: number, password: string, clientIp: string, cookie?: string) => {
      const response = await fetch(`${gateways[replica % gateways.length]!.url}/auth/token?grant_type=password`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-forwarded-for': clientIp,
          ...(cookie !== undefined ? { cookie } : {}),
        },
        body: JSON.stringify({ email: VICTIM, password }),
      })
      const body = (await response.json()) as { error_code?: string; access_token?: string }
      return {
        status: response.status,
        code: body.error_code ?? (body.access_token ? 'session' : ''),
        setCookie: response.headers.get('set-cookie'),
        policy: response.headers.get('ratelimit-policy'),
      }
    }
    const guess = (i: number) => signIn(i, `attacker-guess-${i}`, `198.51.100.${100 + i}`)
    const attacker: string[] = []
    for (let i = 0; i < 9; i++) attacker.push(`${(await guess(i)).status}`)
    // Nine failures from nine addresses: the victim's correct password from its own address still
    // reaches Supabase Auth and signs in (a success costs nothing), and its browser gets a device cookie.
    const own = await signIn(0, PASSWORD, '192.0.2.77')
    assert.deepEqual([own.status, own.code], [200, 'session'])
    assert.match(
      own.setCookie ?? '',
      /^authgate-device=[\w.-]+; Path=\/auth\/token; Max-Age=\d+; HttpOnly; SameSite=Lax$/,
    )
    assert.ok(!own.setCookie!.includes('victim'))
    const cookie = own.setCookie!.slice(0, own.setCookie!.indexOf(';'))
    // The attacker keeps going: the 10th failure locks the account for everyone without the cookie.
    for (let i = 9; i < 14; i++) attacker.push(`${(await guess(i)).status}`)
    assert.deepEqual(attacker, [...Array<string>(10).fill('400'), '429', '429', '429', '429'])
    const locked = await signIn(1, PASSWORD, '192.0.2.77')
    assert.deepEqual(
      [locked.status, locked.code, locked.policy],
      [429, 'over_request_rate_limit', '"account";q=10;w=900'],
    )
    // The victim's browser, on either replica, signs in with its own budget.
    const known = [await signIn(1, PASSWORD, '192.0.2.77', cookie), await signIn(0, PASSWORD, '192.0.2.78', cookie)]
    assert.deepEqual(
      known.map((k) => [k.status, k.code]),
      [
        [200, 'session'],
        [200, 'session'],
      ],
    )
    t.diagnostic(
      `lock-out replay: attacker ${attacker.filter((a) => a === '400').length} failures reached Supabase Auth, then ${attacker.filter((a) => a === '429').length} refused; victim after 9 failures: ${own.status}; victim without cookie once locked: ${locked.status}; victim with its device cookie: ${known.map((k) => k.status).join(', ')}`,
    )
  })

  it('stops 40 recovery e-mails from one client at its share, before Supabase Auth’s e-mail budget runs out', async (t) => {
    const statuses: number[] = []
    const bodies: Array<{ error_code?: string; msg?: string }> = []
    for (let i = 0; i < 40; i++) {
      const response = await post(i, '/recover', { email: RECOVERY_USERS[i] }, '203.0.113.200')
      statuses.push(response.status)
      const body = (await response.json()) as { error_code?: string; msg?: string }
      bodies.push(body)
      if (response.status === 429)
        assert.equal(response.headers.get('ratelimit-policy'), '"email-budget-client";q=2;w=3600')
    }
    // Supabase Auth's 10 an hour: authgate's budget 5 at once, one client's share (50%) 2.
    assert.deepEqual(statuses.slice(0, 2), [200, 200])
    assert.ok(statuses.slice(2).every((s) => s === 429))
    assert.ok(bodies.slice(2).every((b) => b.error_code === 'over_email_send_rate_limit' && /share/.test(b.msg ?? '')))
    // Other clients spend the rest of authgate's budget; then authgate answers for everyone, and
    // Supabase Auth's own budget (10) is never reached.
    const others: Array<{ status: number; policy: string | null; code?: string }> = []
    for (let i = 0; i < 6; i++) {
      const response = await post(i, '/recover', { email: RECOVERY_USERS[i] }, `203.0.113.${10 + i}`)
      const body = (await response.json()) as { error_code?: string }
      others.push({ status: response.status, policy: response.headers.get('ratelimit-policy'), code: body.error_code })
    }
    t.diagnostic(
      `recovery e-mails: one client 2 of 40, then ${others.filter((o) => o.status === 200).length} from others before the budget answered`,
    )
    assert.deepEqual(
      others.map((o) => o.status),
      [200, 200, 200, 429, 429, 429],
    )
    assert.ok(
      others.slice(3).every((o) => o.policy === '"email-budget";q=5;w=3600' && o.code === 'over_email_send_rate_limit'),
    )
    // Every 429 was authgate's (with its RateLimit-Policy). Supabase Auth's own budget was real
    // and had room left: asked directly, it sends exactly the 5 e-mails authgate held back, then
    // answers its over_email_send_rate_limit.
    const direct: string[] = []
    for (let i = 0; i < 6; i++) {
      const response = await fetch(`${backend.url}/recover`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': `192.0.2.${100 + i}` },
        body: JSON.stringify({ email: RECOVERY_USERS[20 + i] }),
      })
      const body = (await response.json()) as { error_code?: string }
      direct.push(`${response.status}${body.error_code ? ' ' + body.error_code : ''}`)
    }
    assert.deepEqual(direct, ['200', '200', '200', '200', '200', '429 over_email_send_rate_limit'])
  })

  it('hands Supabase Auth each client’s own IP: its per-IP limit counts two clients as two', async () => {
    const verify = (clientIp: string) =>
      post(0, '/verify', { type: 'email', email: RECOVERY_USERS[39], token: '000000' }, clientIp)
    // Supabase Auth's limit holds 30 at once and gives one back every 10 s: on a loaded machine a
    // unit may come back while the 31 are sent, so the client keeps going until it is refused.
    const first: number[] = []
    while (first.length < 40 && first.at(-1) !== 429) {
      const response = await verify('192.0.2.10')
      await response.body?.cancel()
      first.push(response.status)
    }
    // Supabase Auth answered (a wrong code: 403) until its own limit refused this client.
    assert.equal(first.at(-1), 429, first.join(','))
    assert.ok(first.length >= 31, first.join(','))
    assert.ok(
      first.slice(0, -1).every((s) => s === 403),
      first.join(','),
    )
    const second = await verify('192.0.2.11')
    await second.body?.cancel()
    assert.equal(second.status, 403, 'another client is not limited by the first one’s count')
  })
})

/**
 * One user's own flows from one client IP, through authgate at its defaults (budgets of 30, a share
 * of 20%) in front of a Supabase Auth at its own default e-mail budget (30) that sends e-mail.
 */
describe('one client’s own message flows at the default budgets', { skip: unavailable }, () => {
  let backend: SupabaseAuthServer
  let gateway: GatewayProcess | undefined

  before(async () => {
    const port = await reservePort()
    backend = await startSupabaseAuth({
      publicUrl: `http://localhost:${port.port}/auth`,
      database: 'authgate_e2e_abuse_mix',
      extraEnv: { GOTRUE_MAILER_AUTOCONFIRM: 'false', GOTRUE_RATE_LIMIT_EMAIL_SENT: '30' },
    })
    await port.release()
    gateway = await startGatewayProcess({
      port: port.port,
      backendUrl: backend.url,
      env: {
        AUTHGATE_TRUSTED_PROXIES: '127.0.0.1/32,::1/128',
        AUTHGATE_ACCOUNT_KEY_SECRET: 'e2e-abuse-mix-secret-of-at-least-32-characters',
      },
    })
  })
  after(async () => {
    await gateway?.stop()
    await backend?.stop()
  })

  it('is never refused: sign-up, resend, confirm, OTP, recovery and e-mail change', async (t) => {
    const CLIENT = '203.0.113.77'
    const answers: string[] = []
    const call = async (method: string, path: string, body: unknown, token?: string) => {
      const response = await fetch(`${gateway!.url}/auth${path}`, {
        method,
        headers: {
          'content-type': 'application/json',
          'x-forwarded-for': CLIENT,
          ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(body),
      })
      const json = (await response.json()) as { error_code?: string; access_token?: string }
      const policy = response.headers.get('ratelimit-policy')
      answers.push(
        `${method} ${path.split('?')[0]} ${response.status}${json.error_code ? ' ' + json.error_code : ''}${response.status === 429 && policy ? ' ' + policy : ''}`,
      )
      return json
    }
    const flows = async (user: string) => {
      const email = `${user}@example.com`
      const password = 'mix-password-9'
      await call('POST', '/signup', { email, password })
      await call('POST', '/resend', { type: 'signup', email })
      // The link of the confirmation e-mail, as the user would follow it.
      const tokenHash = await runPsql(
        postgresTarget(),
        backend.database,
        `SELECT confirmation_token FROM auth.users WHERE email = '${email}'`,
      )
      await call('POST', '/verify', { type: 'signup', token_hash: tokenHash })
      const session = await call('POST', '/token?grant_type=password', { email, password })
      await call('POST', '/otp', { email, create_user: false })
      await call('POST', '/recover', { email })
      await call('PUT', '/user', { email: `${user}-new@example.com` }, session.access_token)
    }
    // One user's every flow (5 messages), then a second user's sign-up and resend from the same
    // address (7 in all): never refused, while the budget (15 at once) has more than half left.
    await flows('mix-a')
    await call('POST', '/signup', { email: 'mix-b@example.com', password: 'mix-password-9' })
    await call('POST', '/resend', { type: 'signup', email: 'mix-b@example.com' })
    const refusedInMix = answers.filter((a) => !/ 200$/.test(a))
    // Past that, one address spending more of everyone's budget is held to its share (3).
    await call('POST', '/otp', { email: 'mix-b@example.com', create_user: false })
    t.diagnostic(
      `one client, default budgets: ${answers.length - 1} requests of its own flows (7 messages), ${refusedInMix.length} refused; ` +
        `the next message: ${answers.at(-1)}\n${answers.join('\n')}`,
    )
    assert.deepEqual(refusedInMix, [], answers.join('\n'))
    assert.equal(answers.at(-1), 'POST /otp 429 over_email_send_rate_limit "email-budget-client";q=3;w=3600')
  })
})
