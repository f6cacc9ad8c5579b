import assert from 'node:assert/strict'
import { LIMITABLE_ROUTES } from '../../src/auth/routes/index.ts'
import { describe, it } from 'node:test'
import { accountIdentifier, accountKeyer, messageChannel } from '../../src/ratelimit/account-key.ts'
import { budgetFor, loadAccountLimits, loadBudgets } from '../../src/ratelimit/abuse-config.ts'
import { DEVICE_COOKIE, deviceCookies, devicePolicy } from '../../src/ratelimit/device-cookie.ts'
import { MemoryStore } from '../../src/ratelimit/memory-store.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { withFakeBackend } from '../support/app.ts'

const SECRET = 'x'.repeat(32)

describe('account identifiers', () => {
  it('normalises an e-mail (trimmed, lower case) and a phone (E.164)', () => {
    assert.equal(accountIdentifier({ email: '  Ada@Example.COM ' }), 'e:ada@example.com')
    assert.equal(accountIdentifier({ phone: '+1 (555) 000-0001' }), 'p:+15550000001')
    assert.equal(accountIdentifier({ phone: '15550000001' }), 'p:+15550000001')
    assert.equal(accountIdentifier({ phone: ' ' }), undefined)
    assert.equal(accountIdentifier({}), undefined)
    assert.equal(accountIdentifier('x'), undefined)
    assert.equal(messageChannel({ phone: '+15550000001' }), 'sms')
    assert.equal(messageChannel({ email: 'a@b.c' }), 'email')
    assert.equal(messageChannel({}), undefined)
  })

  it('lower-cases an e-mail as Go’s strings.ToLower does, one character at a time', () => {
    // Each pair: what JavaScript's whole-string toLowerCase would split off, and Go's reading.
    assert.equal(accountIdentifier({ email: 'vİctim@example.com' }), 'e:victim@example.com')
    assert.equal(accountIdentifier({ email: 'ΑΣ@example.com' }), 'e:ασ@example.com')
    assert.equal(accountIdentifier({ email: 'ΣΑΣ' }), 'e:σασ')
    assert.equal(accountIdentifier({ email: '\u212Aelvin@example.com' }), 'e:kelvin@example.com')
  })

  it('keys by an HMAC that holds no part of the identifier and depends on the secret', () => {
    const key = accountKeyer(SECRET)('e:ada@example.com')
    assert.match(key, /^[A-Za-z0-9_-]{22}$/)
    assert.ok(!key.includes('ada'))
    assert.equal(key, accountKeyer(SECRET)('e:ada@example.com'))
    assert.notEqual(key, accountKeyer('y'.repeat(32))('e:ada@example.com'))
  })
})

describe('abuse-protection settings', () => {
  it('has defaults for every account route and overrides per route', async () => {
    const d = loadAccountLimits({}, LIMITABLE_ROUTES)
    assert.equal(d.routes.get('POST /token')?.limit, 10)
    assert.equal(d.routes.get('POST /recover')?.limit, 5)
    assert.equal(d.secretConfigured, false)
    const o = loadAccountLimits(
      {
        AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'post /token=3/1m, POST /signup=off',
        AUTHGATE_ACCOUNT_KEY_SECRET: SECRET,
      },
      LIMITABLE_ROUTES,
    )
    assert.equal(o.routes.get('POST /token')?.limit, 3)
    assert.equal(o.routes.has('POST /signup'), false)
    assert.equal(o.secret, SECRET)
    assert.throws(
      () => loadAccountLimits({ AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /verify=1/1m' }, LIMITABLE_ROUTES),
      /names no account/,
    )
    assert.throws(
      () => loadAccountLimits({ AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /token' }, LIMITABLE_ROUTES),
      /expected/,
    )
    assert.throws(
      () =>
        loadAccountLimits(
          { AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /token=1/1m,POST /token=2/1m' },
          LIMITABLE_ROUTES,
        ),
      /given twice/,
    )
    assert.throws(() => loadAccountLimits({ AUTHGATE_ACCOUNT_KEY_SECRET: 'short' }, LIMITABLE_ROUTES), /32 characters/)
    // `off` turns off what it names, and only that.
    const noSignIn = loadAccountLimits({ AUTHGATE_ACCOUNT_RATE_LIMIT: 'off' }, LIMITABLE_ROUTES)
    assert.deepEqual([...noSignIn.routes.keys()], ['POST /otp', 'POST /magiclink', 'POST /recover', 'POST /resend'])
    const none = loadAccountLimits(
      { AUTHGATE_ACCOUNT_RATE_LIMIT: 'OFF', AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT: 'off' },
      LIMITABLE_ROUTES,
    )
    assert.equal(none.routes.size, 0)
    // AUTHGATE_RATE_LIMITED_ROUTES=none governs the per-client-IP limits only, as --help says.
    const noClient = loadRateLimitSettings({ AUTHGATE_RATE_LIMITED_ROUTES: 'none' })
    assert.equal(noClient.routes.size, 0)
    assert.equal(noClient.accounts?.routes.size, 6)
    assert.ok(noClient.budgets?.email !== undefined && noClient.budgets.sms !== undefined)
    const { settingsHelp } = await import('../../src/config/schema.ts')
    assert.match(
      settingsHelp(),
      /none: no per-client-IP limit on any route \(the per-account limits and the e-mail and SMS budgets stay on/,
    )
  })

  it("halves Supabase Auth's hourly count so no hour of its own can see more", () => {
    const b = budgetFor(30, 0.2, 'email')
    assert.deepEqual([b.policy.limit, b.policy.burst, b.policy.windowMs], [15, 15, 3_600_000])
    assert.deepEqual([b.clientPolicy.limit, b.clientPolicy.burst], [3, 3])
    // The burst plus the units that come back within an hour never exceed the backend's count.
    for (const n of [1, 2, 3, 7, 30, 100]) {
      const { policy } = budgetFor(n, 1, 'sms')
      const interval = policy.windowMs / policy.limit
      assert.ok(policy.burst + Math.floor(3_600_000 / interval) <= n, `budget of ${n}`)
    }
    assert.equal(loadBudgets({ AUTHGATE_EMAIL_BUDGET: 'off' }, LIMITABLE_ROUTES).email, undefined)
    assert.equal(loadBudgets({ AUTHGATE_BUDGET_CLIENT_SHARE: '50%' }, LIMITABLE_ROUTES).clientShare, 0.5)
    assert.throws(() => loadBudgets({ AUTHGATE_BUDGET_CLIENT_SHARE: '0%' }, LIMITABLE_ROUTES), /percentage/)
    assert.throws(() => loadBudgets({ AUTHGATE_SMS_BUDGET: '-1' }, LIMITABLE_ROUTES), /count per hour/)
  })
})

async function harness(env: Record<string, string>, settings: Record<string, unknown> = { mailer_autoconfirm: false }) {
  const h = await withFakeBackend(
    {},
    {
      rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMITED_ROUTES: 'none', ...env }),
      rateLimitStore: new MemoryStore(),
    },
  )
  h.backend.handler = (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(req.url === '/settings' ? JSON.stringify(settings) : '{}')
  }
  return h
}

/**
 * The fake backend answers password sign-ins as Supabase Auth answers a wrong password (400,
 * `x-sb-error-code: invalid_credentials`), except for the passwords in `right`, after `delayMs`.
 */
function refuseSignIns(h: Awaited<ReturnType<typeof harness>>, right: string[] = [], delayMs = 0) {
  const other = h.backend.handler
  h.backend.handler = (req, res, body) => {
    if (!req.url!.startsWith('/token?grant_type=password')) return other(req, res, body)
    const password = (JSON.parse(body.toString()) as { password: string }).password
    const answer = () => {
      if (right.includes(password)) {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"access_token":"t"}')
        return
      }
      const code = password === 'unconfirmed' ? 'email_not_confirmed' : 'invalid_credentials'
      res.writeHead(400, { 'content-type': 'application/json', 'x-sb-error-code': code })
      res.end(JSON.stringify({ code: 400, error_code: code, msg: 'Invalid login credentials' }))
    }
    if (delayMs > 0) setTimeout(answer, delayMs)
    else answer()
  }
}

const json = (url: string, body: unknown, ip: string) => ({
  method: 'POST' as const,
  url,
  remoteAddress: ip,
  headers: { 'content-type': 'application/json' },
  payload: JSON.stringify(body),
})

describe('per-account limits and budgets on the app', () => {
  it('limits failed password sign-ins to one account from any number of addresses, and names the limit', async (t) => {
    const h = await harness({ AUTHGATE_ACCOUNT_RATE_LIMIT: '3/1h' })
    t.after(() => h.close())
    refuseSignIns(h)
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) {
      const res = await h.app.inject(
        json(
          '/auth/token?grant_type=password',
          { email: i % 2 ? 'ADA@example.com' : 'Ada@Example.com', password: 'x'.repeat(8) },
          `198.51.100.${i + 1}`,
        ),
      )
      statuses.push(res.statusCode)
      if (res.statusCode === 429) {
        assert.equal(res.json().error_code, 'over_request_rate_limit')
        assert.match(res.json().msg, /this account/)
        assert.equal(res.headers['ratelimit-policy'], '"account";q=3;w=3600')
        assert.ok(Number(res.headers['retry-after']) > 0)
      }
    }
    assert.deepEqual(statuses, [400, 400, 400, 429, 429])
    // Another account, and a refresh-token grant (no account), are not touched.
    assert.equal(
      (
        await h.app.inject(
          json(
            '/auth/token?grant_type=password',
            { email: 'bob@example.com', password: 'x'.repeat(8) },
            '198.51.100.1',
          ),
        )
      ).statusCode,
      400,
    )
    assert.equal(
      (await h.app.inject(json('/auth/token?grant_type=refresh_token', { refresh_token: 'abc' }, '198.51.100.1')))
        .statusCode,
      200,
    )
    const forwarded = h.backend.requests.filter((r) => r.target.startsWith('/token')).length
    assert.equal(forwarded, 5)
    assert.equal(h.app.authgate.rateLimiter?.counters.deniedBy.get('account\tPOST /token'), 2)
    const metrics = (await h.app.inject({ method: 'GET', url: '/metrics' })).body
    assert.match(metrics, /authgate_rate_limit_denied_total\{limit="account",route="POST \/token"\} 2/)
    assert.doesNotMatch(metrics, /ada@/i)
  })

  it('charges a sign-in only once Supabase Auth refused its password', async (t) => {
    const h = await harness({ AUTHGATE_ACCOUNT_RATE_LIMIT: '3/1h' })
    t.after(() => h.close())
    refuseSignIns(h, ['right-password'])
    const signIn = (password: string, ip = '198.51.100.7') =>
      h.app.inject(json('/auth/token?grant_type=password', { email: 'ada@example.com', password }, ip))
    // Ten correct sign-ins and two after an unconfirmed address (a correct password) cost nothing.
    for (let i = 0; i < 10; i++) assert.equal((await signIn('right-password')).statusCode, 200)
    for (let i = 0; i < 2; i++) assert.equal((await signIn('unconfirmed')).statusCode, 400)
    // Two wrong guesses leave one unit: the owner signs in with it, and keeps it.
    for (let i = 0; i < 2; i++) assert.equal((await signIn('wrong-guess', `203.0.113.${i}`)).statusCode, 400)
    for (let i = 0; i < 3; i++) assert.equal((await signIn('right-password')).statusCode, 200)
    assert.equal((await signIn('wrong-guess', '203.0.113.9')).statusCode, 400)
    // The third failure empties the bucket: refused up front, right password or not.
    assert.equal((await signIn('right-password')).statusCode, 429)
    assert.equal(h.backend.requests.filter((r) => r.target.startsWith('/token')).length, 18)
  })

  it('lets no more parallel guesses through than the bucket holds', async (t) => {
    const h = await harness({ AUTHGATE_ACCOUNT_RATE_LIMIT: '3/1h' })
    t.after(() => h.close())
    // Every guess is in flight before any answer comes back.
    refuseSignIns(h, [], 200)
    const guesses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        h.app.inject(
          json('/auth/token?grant_type=password', { email: 'ada@example.com', password: `g${i}` }, `192.0.2.${i}`),
        ),
      ),
    )
    const statuses = guesses.map((r) => r.statusCode).sort()
    assert.deepEqual(statuses, [400, 400, 400, ...Array<number>(9).fill(429)])
    assert.equal(h.backend.requests.filter((r) => r.target.startsWith('/token')).length, 3)
  })

  it('holds a sprayer to its share once it eats into the budget everyone shares', async (t) => {
    // Supabase Auth's 20/h: authgate's budget 10 at once, one client's share (30%) 3, enforced
    // once fewer than half (5) are left.
    const h = await harness({ AUTHGATE_EMAIL_BUDGET: '20', AUTHGATE_BUDGET_CLIENT_SHARE: '30%' })
    t.after(() => h.close())
    const one: number[] = []
    for (let i = 0; i < 8; i++) {
      const res = await h.app.inject(json('/auth/recover', { email: `user${i}@example.com` }, '203.0.113.1'))
      one.push(res.statusCode)
      if (res.statusCode === 429) {
        assert.equal(res.json().error_code, 'over_email_send_rate_limit')
        assert.match(res.json().msg, /share/)
        assert.equal(res.headers['ratelimit-policy'], '"email-budget-client";q=3;w=3600')
      }
    }
    // Alone, it sends while at least half the budget is left; the message that would leave less is refused.
    assert.deepEqual(one, [200, 200, 200, 200, 200, 429, 429, 429])
    // Other clients draw on the rest (5 of 10), each within its share, then the budget answers for everyone.
    const others: number[] = []
    for (let i = 0; i < 8; i++) {
      const res = await h.app.inject(
        json('/auth/otp', { email: `other${i}@example.com` }, `203.0.113.${10 + (i >> 1)}`),
      )
      others.push(res.statusCode)
      if (res.statusCode === 429) assert.match(res.json().msg, /budget is spent/)
    }
    assert.deepEqual(others, [200, 200, 200, 200, 200, 429, 429, 429])
    assert.equal(h.backend.requests.length - h.backend.requests.filter((r) => r.target === '/settings').length, 10)
    // SMS has its own budget.
    assert.equal((await h.app.inject(json('/auth/otp', { phone: '+15550000001' }, '203.0.113.50'))).statusCode, 200)
  })

  it('never refuses a client alone while the budget has room, whatever its share', async (t) => {
    // The defaults: Supabase Auth's 30/h, a share of 20% (3), enforced below half of 15.
    const h = await harness({})
    t.after(() => h.close())
    const flows = [
      json('/auth/signup', { email: 'mix@example.com', password: 'x'.repeat(10) }, '203.0.113.7'),
      json('/auth/resend', { type: 'signup', email: 'mix@example.com' }, '203.0.113.7'),
      json('/auth/otp', { email: 'mix@example.com' }, '203.0.113.7'),
      json('/auth/recover', { email: 'mix@example.com' }, '203.0.113.7'),
      json('/auth/otp', { email: 'mix2@example.com' }, '203.0.113.7'),
      json('/auth/recover', { email: 'mix2@example.com' }, '203.0.113.7'),
      json('/auth/signup', { email: 'mix3@example.com', password: 'x'.repeat(10) }, '203.0.113.7'),
    ]
    for (const flow of flows) assert.equal((await h.app.inject(flow)).statusCode, 200, flow.url)
  })

  it('caps a sprayer at the defaults once it would leave less than half of the budget', async (t) => {
    const h = await harness({})
    t.after(() => h.close())
    const sprayer: number[] = []
    for (let i = 0; i < 20; i++)
      sprayer.push((await h.app.inject(json('/auth/otp', { email: `s${i}@example.com` }, '192.0.2.66'))).statusCode)
    const others: number[] = []
    for (let i = 0; i < 12; i++)
      others.push(
        (await h.app.inject(json('/auth/otp', { email: `o${i}@example.com` }, `198.51.100.${i >> 1}`))).statusCode,
      )
    const through = (a: number[]) => a.filter((s) => s === 200).length
    console.log(
      `budget 30 (15 at once), share 20%: a sprayer got ${through(sprayer)} of 20 through, then other clients ${through(others)} of 12`,
    )
    assert.deepEqual(sprayer, [...Array<number>(7).fill(200), ...Array<number>(13).fill(429)])
    assert.deepEqual(others, [...Array<number>(8).fill(200), ...Array<number>(4).fill(429)])
    assert.equal(h.app.authgate.rateLimiter!.counters.deniedBy.get('email_budget_client\tPOST /otp'), 13)
    assert.equal(h.app.authgate.rateLimiter!.counters.deniedBy.get('email_budget\tPOST /otp'), 4)
  })

  it('does not charge sign-ups the backend confirms without a message', async (t) => {
    const h = await harness(
      { AUTHGATE_EMAIL_BUDGET: '2', AUTHGATE_BUDGET_CLIENT_SHARE: '100%' },
      { mailer_autoconfirm: true },
    )
    t.after(() => h.close())
    for (let i = 0; i < 3; i++) {
      const res = await h.app.inject(
        json('/auth/signup', { email: `s${i}@example.com`, password: 'x'.repeat(8) }, '203.0.113.1'),
      )
      assert.equal(res.statusCode, 200)
    }
    assert.equal((await h.app.inject(json('/auth/recover', { email: 'r@example.com' }, '203.0.113.1'))).statusCode, 200)
    assert.equal((await h.app.inject(json('/auth/recover', { email: 'q@example.com' }, '203.0.113.1'))).statusCode, 429)
  })

  it('charges sign-ups while the backend cannot say whether it confirms by itself', async (t) => {
    const h = await harness({ AUTHGATE_EMAIL_BUDGET: '2', AUTHGATE_BUDGET_CLIENT_SHARE: '100%' })
    h.backend.handler = (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end('{}')
    }
    t.after(() => h.close())
    const signUp = (email: string) =>
      h.app.inject(json('/auth/signup', { email, password: 'x'.repeat(8) }, '203.0.113.1'))
    await signUp('a@example.com')
    assert.equal((await signUp('b@example.com')).statusCode, 429)
  })

  it('charges sign-ups while the backend confirms by message, or cannot say', async (t) => {
    const h = await harness({ AUTHGATE_EMAIL_BUDGET: '2', AUTHGATE_BUDGET_CLIENT_SHARE: '100%' }, {})
    t.after(() => h.close())
    assert.equal(
      (await h.app.inject(json('/auth/signup', { email: 'a@example.com', password: 'x'.repeat(8) }, '203.0.113.1')))
        .statusCode,
      200,
    )
    assert.equal(
      (await h.app.inject(json('/auth/signup', { email: 'b@example.com', password: 'x'.repeat(8) }, '203.0.113.1')))
        .statusCode,
      429,
    )
  })
})

describe('device cookies against targeted lock-out', () => {
  it('binds a cookie to one account under a MAC, with no identifier in it', () => {
    const cookies = deviceCookies(SECRET)
    const set = cookies.issue('e:ada@example.com', '/auth/token', true)
    assert.match(
      set,
      /^authgate-device=[\w-]{22}\.[\w-]{22}\.[\w-]{22}; Path=\/auth\/token; Max-Age=15552000; HttpOnly; Secure; SameSite=Lax$/,
    )
    assert.ok(!set.includes('ada'))
    const value = set.slice(DEVICE_COOKIE.length + 1, set.indexOf(';'))
    const header = `other=1; ${DEVICE_COOKIE}=${value}`
    const device = cookies.deviceOf(header, 'e:ada@example.com')
    assert.equal(device, value.split('.').slice(0, 2).join('.'))
    // Another account, another secret, a changed nonce or MAC, extra parts: not a known device.
    assert.equal(cookies.deviceOf(header, 'e:bob@example.com'), undefined)
    assert.equal(deviceCookies('y'.repeat(32)).deviceOf(header, 'e:ada@example.com'), undefined)
    const [tag, nonce, mac] = value.split('.') as [string, string, string]
    for (const forged of [`${tag}.${nonce}x.${mac}`, `${tag}.${nonce}.${mac.slice(1)}`, `${value}.x`, tag, 'x'])
      assert.equal(cookies.deviceOf(`${DEVICE_COOKIE}=${forged}`, 'e:ada@example.com'), undefined, forged)
    assert.equal(cookies.deviceOf(undefined, 'e:ada@example.com'), undefined)
    assert.equal(cookies.deviceOf(`${DEVICE_COOKIE}x=${value}; ${DEVICE_COOKIE}`, 'e:ada@example.com'), undefined)
    // A forged one beside the real one does not hide it.
    assert.equal(cookies.deviceOf(`${DEVICE_COOKIE}=x.y.z; ${DEVICE_COOKIE}=${value}`, 'e:ada@example.com'), device)
    assert.doesNotMatch(cookies.issue('e:ada@example.com', '/token', false), /Secure/)
    assert.deepEqual(devicePolicy({ name: 'account', limit: 10, windowMs: 900_000, burst: 10 }), {
      name: 'account-device',
      limit: 5,
      windowMs: 900_000,
      burst: 5,
    })
    assert.equal(devicePolicy({ name: 'account', limit: 1, windowMs: 1000, burst: 1 }).limit, 1)
  })

  it("keeps the owner's browser signing in while strangers lock the account out", async (t) => {
    const h = await harness({})
    t.after(() => h.close())
    refuseSignIns(h, ['owner-password'])
    const signIn = (password: string, ip: string, cookie?: string) =>
      h.app.inject({
        ...json('/auth/token?grant_type=password', { email: 'ada@example.com', password }, ip),
        ...(cookie !== undefined ? { headers: { 'content-type': 'application/json', cookie } } : {}),
      })
    const first = await signIn('owner-password', '203.0.113.5')
    assert.equal(first.statusCode, 200)
    const set = String(first.headers['set-cookie'])
    assert.match(set, /^authgate-device=.+; Path=\/auth\/token; .*HttpOnly/)
    const cookie = set.slice(0, set.indexOf(';'))
    // A failed sign-in sets no cookie; a known device is not given another.
    const attacker: number[] = []
    for (let i = 0; i < 12; i++) {
      const res = await signIn(`guess-${i}`, `198.51.100.${i + 1}`)
      attacker.push(res.statusCode)
      assert.equal(res.headers['set-cookie'], undefined)
    }
    assert.deepEqual(attacker, [...Array<number>(10).fill(400), 429, 429])
    // Locked for clients without the cookie, the owner's own address included (bearer-only clients: as before).
    assert.equal((await signIn('owner-password', '203.0.113.5')).statusCode, 429)
    // The owner's browser signs in, and keeps doing so.
    for (let i = 0; i < 3; i++) {
      const res = await signIn('owner-password', '203.0.113.5', cookie)
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['set-cookie'], undefined)
    }
    // The device cookie is authgate's credential: Supabase Auth never receives it, other cookies it does.
    h.backend.requests.length = 0
    await signIn('owner-password', '203.0.113.5', `theme=dark; ${cookie}; lang=en`)
    assert.equal(h.backend.requests.at(-1)!.headers.cookie, 'theme=dark; lang=en')
    await signIn('owner-password', '203.0.113.5', cookie)
    assert.equal(h.backend.requests.at(-1)!.headers.cookie, undefined)
    // Its own failures spend its own budget (5), then it too is refused, naming the device.
    const own: number[] = []
    for (let i = 0; i < 6; i++) own.push((await signIn('typo', '203.0.113.5', cookie)).statusCode)
    assert.deepEqual(own, [400, 400, 400, 400, 400, 429])
    assert.equal(h.app.authgate.rateLimiter!.counters.deniedBy.get('account_device\tPOST /token'), 1)
    // Without the cookie, or with a forged one, the lock holds.
    assert.equal((await signIn('x'.repeat(8), '203.0.113.9')).statusCode, 429)
    assert.equal((await signIn('owner-password', '198.51.100.1', `${cookie}x`)).statusCode, 429)
  })

  it('sets no device cookie when turned off', async (t) => {
    const h = await harness({ AUTHGATE_ACCOUNT_DEVICE_COOKIE: 'off' })
    t.after(() => h.close())
    refuseSignIns(h, ['owner-password'])
    const res = await h.app.inject(
      json('/auth/token?grant_type=password', { email: 'ada@example.com', password: 'owner-password' }, '203.0.113.5'),
    )
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['set-cookie'], undefined)
    assert.throws(
      () => loadAccountLimits({ AUTHGATE_ACCOUNT_DEVICE_COOKIE: 'maybe' }, LIMITABLE_ROUTES),
      /"on" or "off"/,
    )
  })
})

describe('per-account limits when the store fails, and their log lines', () => {
  const failing = {
    take: () => Promise.reject(new Error('redis down')),
    close: () => Promise.resolve(),
  }
  for (const policy of ['open', 'closed'] as const) {
    it(`follows the failure policy (${policy})`, async (t) => {
      const h = await withFakeBackend(
        {},
        {
          rateLimit: loadRateLimitSettings({
            AUTHGATE_RATE_LIMITED_ROUTES: 'none',
            AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: policy,
          }),
          rateLimitStore: failing,
        },
      )
      t.after(() => h.close())
      const res = await h.app.inject(json('/auth/recover', { email: 'a@example.com' }, '203.0.113.1'))
      assert.equal(res.statusCode, policy === 'open' ? 200 : 429)
      const counters = h.app.authgate.rateLimiter!.counters
      // Open: the account, the client's share and the budget were each let through; closed: the first refuses.
      assert.equal(policy === 'open' ? counters.failedOpen : counters.failedClosed, policy === 'open' ? 3 : 1)
    })
  }

  it('asks a failing store once per request: a stalled Redis costs one timeout, not one per limit', async (t) => {
    let calls = 0
    const h = await withFakeBackend(
      {},
      {
        // The defaults: a per-IP limit on /recover, the per-account limit and the e-mail budget and share.
        rateLimit: loadRateLimitSettings({}),
        rateLimitStore: {
          take: () => {
            calls++
            return Promise.reject(new Error('no decision in time'))
          },
          close: () => Promise.resolve(),
        },
      },
    )
    t.after(() => h.close())
    const res = await h.app.inject(json('/auth/recover', { email: 'a@example.com' }, '203.0.113.1'))
    assert.equal(res.statusCode, 200)
    const counters = h.app.authgate.rateLimiter!.counters
    assert.deepEqual([calls, counters.storeErrors, counters.failedOpen], [1, 1, 4])
  })

  it('gives the shared unit back when the share cannot be decided (fail-closed), and counts a refund that fails', async (t) => {
    const memory = new MemoryStore()
    let takes = 0
    const h = await withFakeBackend(
      {},
      {
        rateLimit: loadRateLimitSettings({
          AUTHGATE_RATE_LIMITED_ROUTES: 'none',
          AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT: 'off',
          AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: 'closed',
        }),
        rateLimitStore: {
          // The shared budget decides; the store is gone by the client's share, and for the refund.
          take: (key, policy) =>
            ++takes === 1 ? memory.take(key, policy) : Promise.reject(new Error('connection lost')),
          refund: () => Promise.reject(new Error('connection lost')),
          close: () => memory.close(),
        },
      },
    )
    t.after(() => h.close())
    const res = await h.app.inject(json('/auth/recover', { email: 'a@example.com' }, '203.0.113.1'))
    assert.equal(res.statusCode, 429)
    assert.match(res.json().msg, /temporarily unavailable/)
    await new Promise((r) => setImmediate(r))
    const counters = h.app.authgate.rateLimiter!.counters
    assert.deepEqual([takes, counters.failedClosed, counters.storeErrors], [2, 1, 2])
  })

  it('logs which limit answered on which route, never the account', async (t) => {
    const { logCapture } = await import('../support/log-capture.ts')
    const logs = logCapture()
    const h = await withFakeBackend(
      {},
      {
        rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMITED_ROUTES: 'none', AUTHGATE_ACCOUNT_RATE_LIMIT: '1/1h' }),
        rateLimitStore: new MemoryStore(),
        logger: { stream: logs.stream },
      },
    )
    t.after(() => h.close())
    // A backend without error codes: a 400 to a password sign-in counts as a failure.
    h.backend.handler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end('{"error":"invalid_grant"}')
    }
    const body = { email: 'secret-person@example.com', password: 'x'.repeat(8) }
    await h.app.inject(json('/auth/token?grant_type=password', body, '203.0.113.1'))
    const denied = await h.app.inject(json('/auth/token?grant_type=password', body, '203.0.113.2'))
    assert.equal(denied.statusCode, 429)
    const line = logs.lines.find((l) => l.msg === 'rate limit reached')!
    assert.deepEqual([line.limit, line.route, line.occurrences], ['account', 'POST /token', 1])
    assert.ok(!logs.raw().includes('secret-person'))
    assert.equal(h.app.authgate.rateLimiter!.bodyHookFor('GET', '/user'), undefined)
  })
})
