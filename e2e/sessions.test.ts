import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { defineRoute } from '../src/routes-dsl/index.ts'
import type { SessionOptions } from '../src/sessions/index.ts'
import { afterBackendLogged, loggedRequests } from './support/backend-requests.ts'
import { chromiumUnavailableReason, launchChromium } from './support/chromium.ts'
import { postgresTarget, runPsql } from '../scripts/supabase-auth/postgres.ts'
import { startGateway, startStack, type Gateway, type Stack } from './support/stack.ts'
import { totp } from './support/totp.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'

const backendMissing = await backendUnavailableReason()
const browserMissing = backendMissing ?? (await chromiumUnavailableReason())
const PASSWORD = 'correct-horse-battery-9'
/**
 * Access tokens this short expire within the test; the refresh is due a quarter of the lifetime
 * before expiry, so nothing before the burst of concurrent requests refreshes on a loaded machine
 * unless it takes longer than that (the burst then still finds a fresh token, and the test waits
 * for the next expiry instead: see `waitUntilDue`).
 */
const TOKEN_LIFETIME_SECONDS = 8
const COOKIE = '__Host-authgate-session'

async function redisUnavailableReason(): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect(6379, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(undefined)
    })
    socket.once('error', () => resolve('Redis is not listening on 127.0.0.1:6379'))
  })
}

const PAGE = `<!doctype html><title>app</title>
<script>
  // The application's own code: plain fetch on its own origin, the cookie sent by the browser.
  window.call = async (path, init = {}) => {
    const res = await fetch(path, { credentials: 'include', ...init })
    return { status: res.status, body: await res.text() }
  }
  window.signIn = (email, password) =>
    window.call('/auth/token?grant_type=password', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    })
</script>`

/** The application's routes: the page, and two protected routes (one that changes state). */
function appRoutes(app: Parameters<NonNullable<Parameters<typeof startGateway>[1]['beforeListen']>>[0]): void {
  app.get('/app', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(PAGE),
  )
  const me = async (request: {
    user: { email?: string; sub: string; aal?: string } | null
    headers: Record<string, unknown>
  }) => ({
    email: request.user?.email,
    sub: request.user?.sub,
    aal: request.user?.aal,
    bearer: typeof request.headers.authorization === 'string',
  })
  app.route(defineRoute({ method: 'GET', url: '/api/me', tags: ['App'], auth: 'required', handler: me }))
  app.route(defineRoute({ method: 'POST', url: '/api/notes', tags: ['App'], auth: 'required', handler: me }))
}

/** Counts Supabase Auth's `/token` requests from its own log, with a barrier so none is still unlogged. */
async function tokenRequests(backend: SupabaseAuthServer): Promise<number> {
  await afterBackendLogged(
    backend.logs,
    (r) => r.path === '/settings',
    async () => {
      const res = await fetch(`${backend.url}/settings`)
      await res.body?.cancel()
    },
  )
  return loggedRequests(backend.logs()).filter((r) => r.path === '/token').length
}

async function startOtherSite(target: string): Promise<{ server: Server; origin: string }> {
  const form = (action: string) =>
    `<!doctype html><form method="post" action="${target}${action}"><input name="x" value="1"></form><script>document.forms[0].submit()</script>`
  // A link followed from this site: a top-level GET navigation, which carries a SameSite=Lax cookie.
  const navigation = (path: string) => `<!doctype html><script>location = ${JSON.stringify(target + path)}</script>`
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    if (req.url === '/reauthenticate') return void res.end(navigation('/auth/reauthenticate'))
    res.end(form(req.url === '/logout' ? '/auth/logout' : '/api/notes'))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  return { server, origin: `http://localhost:${port}` }
}

describe('cookie sessions in Chromium against Supabase Auth', { skip: browserMissing }, () => {
  let backend: SupabaseAuthServer
  let gateway: Gateway
  let origin = ''
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let other: { server: Server; origin: string }
  /** Every JSON answer the page received, as text. */
  const seen: string[] = []
  const setCookies: string[] = []
  const email = `page-${Date.now()}@example.com`

  before(async () => {
    const reservation = await reservePort()
    origin = `http://localhost:${reservation.port}`
    backend = await startSupabaseAuth({
      publicUrl: `${origin}/auth`,
      database: 'authgate_e2e_sessions',
      extraEnv: { GOTRUE_JWT_EXP: String(TOKEN_LIFETIME_SECONDS), GOTRUE_LOG_LEVEL: 'info' },
    })
    await reservation.release()
    gateway = await startGateway(backend, {
      port: reservation.port,
      prefix: '/auth',
      sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }] },
      protect: { issuer: `${origin}/auth` },
      beforeListen: appRoutes,
    })
    other = await startOtherSite(origin)
    browser = await launchChromium()
    context = await browser.newContext()
    page = await context.newPage()
    page.on('response', async (response) => {
      const cookie = await response.headerValue('set-cookie').catch(() => null)
      if (cookie) setCookies.push(cookie)
      if (!(response.headers()['content-type'] ?? '').includes('json')) return
      seen.push(await response.text().catch(() => ''))
    })
    // The user exists before the page signs in (sign-up in cookie mode answers no tokens either).
    const up = await fetch(`${gateway.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    assert.equal(up.status, 200, await up.text())
  })

  after(async () => {
    await browser?.close()
    other?.server.close()
    try {
      await gateway?.close()
    } finally {
      await backend?.stop()
    }
  })

  const sessionId = async () => (await context.cookies(origin)).find((c) => c.name === COOKIE)?.value
  const stored = async () => gateway.app.authgate.sessions!.sessions.load((await sessionId())!)
  const call = (path: string, init: Record<string, unknown> = {}) =>
    page.evaluate(([p, i]) => (globalThis as any).call(p, i), [path, init] as const) as Promise<{
      status: number
      body: string
    }>

  it('signs in with a password: an HttpOnly __Host- cookie, stand-ins in the page', async () => {
    await page.goto(`${origin}/app`)
    const result = (await page.evaluate(([e, p]) => (globalThis as any).signIn(e, p), [email, PASSWORD])) as {
      status: number
      body: string
    }
    assert.equal(result.status, 200, result.body)
    const body = JSON.parse(result.body) as Record<string, unknown>
    assert.equal((body.user as { email: string }).email, email)
    assert.equal(typeof body.expires_at, 'number')
    // The tokens are stand-ins (docs/sessions.md): worthless without the cookie.
    const standIns = gateway.app.authgate.sessions!.sessions.standIns
    assert.ok(standIns.isAccess(String(body.access_token)))
    assert.ok(standIns.isRefresh(String(body.refresh_token)))

    assert.equal(await page.evaluate(() => document.cookie), '')
    assert.equal(await page.evaluate(() => localStorage.length + sessionStorage.length), 0)
    const cookie = (await context.cookies(origin)).find((c) => c.name === COOKIE)
    assert.ok(cookie, 'Chromium stored the __Host- cookie on http://localhost')
    assert.equal(cookie.httpOnly, true)
    assert.equal(cookie.secure, true)
    assert.equal(cookie.sameSite, 'Lax')
    assert.equal(cookie.path, '/')
    const header = setCookies.find((c) => c.startsWith(COOKIE))!
    assert.ok(header.length < 200, `Set-Cookie is ${header.length} bytes: ${header}`)
    // The stored session holds the tokens, encrypted; the browser holds only the opaque id.
    assert.ok((await stored())?.session.accessToken.startsWith('ey'))
  })

  it("the application's protected route and authgate's bearer routes answer with the user", async () => {
    const me = await call('/api/me')
    assert.equal(me.status, 200, me.body)
    assert.deepEqual({ ...JSON.parse(me.body), sub: undefined }, { email, sub: undefined, aal: 'aal1', bearer: true })
    const user = await call('/auth/user')
    assert.equal(user.status, 200, user.body)
    assert.equal((JSON.parse(user.body) as { email: string }).email, email)
    const session = await call('/auth/session')
    assert.equal(session.status, 200, session.body)
    assert.equal((JSON.parse(session.body) as { user: { email: string } }).user.email, email)
  })

  it('after the access token expires, 10 concurrent requests make exactly one refresh', async () => {
    const before = await stored()
    assert.ok(before)
    // Until the stored token is past its expiry (not merely due), measured on the test's clock.
    while (Date.now() < before.session.expiresAt * 1000 + 250) await sleep(100)
    const tokensBefore = await tokenRequests(backend)
    const refreshesBefore = gateway.app.authgate.sessions!.sessions.refreshes
    const results = (await page.evaluate(() =>
      Promise.all(Array.from({ length: 10 }, () => (globalThis as any).call('/api/me'))),
    )) as Array<{ status: number; body: string }>
    assert.deepEqual(
      results.map((r) => r.status),
      Array(10).fill(200),
      results.map((r) => r.body).join('\n'),
    )
    assert.equal((await tokenRequests(backend)) - tokensBefore, 1, "Supabase Auth's log: one /token request")
    assert.equal(gateway.app.authgate.sessions!.sessions.refreshes - refreshesBefore, 1)
    const afterRefresh = await stored()
    assert.notEqual(afterRefresh?.session.refreshToken, before.session.refreshToken)
    assert.ok(afterRefresh!.session.expiresAt > before.session.expiresAt)
  })

  it('a form posted from another origin (same site) gets 403; the own origin may post', async () => {
    for (const [path, target] of [
      ['/notes', '/api/notes'],
      ['/logout', '/auth/logout'],
    ] as const) {
      const attacker = await context.newPage()
      try {
        const answer = attacker.waitForResponse((r) => r.url().startsWith(origin + target))
        await attacker.goto(other.origin + path)
        const response = await answer
        assert.equal(response.status(), 403, target)
        assert.equal(response.headers()['x-sb-error-code'], 'cross_site_request')
      } finally {
        await attacker.close()
      }
    }
    // Still signed in: the refused sign-out did nothing.
    const own = await call('/api/notes', { method: 'POST' })
    assert.equal(own.status, 200, own.body)
  })

  it('a link from another origin to GET /auth/reauthenticate gets 403: no code is sent', async () => {
    const attacker = await context.newPage()
    try {
      const answer = attacker.waitForResponse((r) => r.url().startsWith(`${origin}/auth/reauthenticate`))
      await attacker.goto(`${other.origin}/reauthenticate`)
      const response = await answer
      assert.equal(response.status(), 403)
      assert.equal(response.headers()['x-sb-error-code'], 'cross_site_request')
    } finally {
      await attacker.close()
    }
    await afterBackendLogged(
      backend.logs,
      (r) => r.path === '/settings',
      async () => {
        const res = await fetch(`${backend.url}/settings`)
        await res.body?.cancel()
      },
    )
    assert.equal(
      loggedRequests(backend.logs()).filter((r) => r.path === '/reauthenticate').length,
      0,
      "Supabase Auth's log: no /reauthenticate",
    )
  })

  it('page script holding only the cookie cannot mint tokens through the OAuth 2.1 server', async () => {
    // The chain a script injected into the page would follow: register a public client, start an
    // authorization with PKCE, read the authorization id off the redirect, then consent with the cookie.
    const chain = (await page.evaluate(async () => {
      const json = { 'content-type': 'application/json' }
      const register = await fetch('/auth/oauth/clients/register', {
        method: 'POST',
        headers: json,
        body: JSON.stringify({
          client_name: 'injected',
          redirect_uris: ['http://localhost:3000/cb'],
          token_endpoint_auth_method: 'none',
        }),
      })
      const client = (await register.json()) as { client_id: string }
      const verifier = 'v'.repeat(64)
      const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))
      const challenge = btoa(String.fromCharCode(...new Uint8Array(digest)))
        .replace(/\+/g, '-')
        .replace(/\//g, '_')
        .replace(/=+$/, '')
      const query = new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: 'http://localhost:3000/cb',
        response_type: 'code',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      })
      const authorize = await fetch(`/auth/oauth/authorize?${query}`)
      const id = new URL(authorize.url).searchParams.get('authorization_id')
      const details = await fetch(`/auth/oauth/authorizations/${id}`)
      const consent = await fetch(`/auth/oauth/authorizations/${id}/consent`, {
        method: 'POST',
        headers: json,
        body: '{"action":"approve"}',
      })
      return {
        register: register.status,
        id,
        details: [details.status, await details.text()],
        consent: [consent.status, await consent.text()],
      }
    })) as { register: number; id: string | null; details: [number, string]; consent: [number, string] }
    assert.equal(chain.register, 201)
    assert.match(String(chain.id), /^[A-Za-z0-9]{20,}$/)
    for (const [status, body] of [chain.details, chain.consent]) {
      assert.equal(status, 403, body)
      assert.equal((JSON.parse(body) as { error_code: string }).error_code, 'session_cookie_refused')
      assert.doesNotMatch(body, /code=|redirect_url/)
    }
  })

  it('sign-out revokes the session at Supabase Auth, forgets it and clears the cookie', async () => {
    const before = await stored()
    assert.ok(before)
    const out = await call('/auth/logout', { method: 'POST' })
    assert.equal(out.status, 204, out.body)
    assert.equal(await sessionId(), undefined)
    assert.equal(await gateway.app.authgate.sessions!.sessions.load(before.id), undefined)
    assert.equal((await call('/auth/session')).status, 401)
    assert.equal((await call('/api/me')).status, 401)
    // Supabase Auth itself no longer knows the session: its refresh token is refused.
    const refresh = await fetch(`${backend.url}/token?grant_type=refresh_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: before.session.refreshToken }),
    })
    assert.equal(refresh.status, 400, await refresh.text())
  })

  it('no JSON answer the page saw carried a real token', () => {
    assert.ok(seen.length >= 5)
    // As fields, only stand-ins: an OAuth client's registration names the `refresh_token` grant type.
    const standIns = gateway.app.authgate.sessions!.sessions.standIns
    for (const text of seen)
      for (const [, field, value] of text.matchAll(/"(access|refresh)_token"\s*:\s*"([^"]*)"/g))
        assert.ok(field === 'access' ? standIns.isAccess(value!) : standIns.isRefresh(value!), `${field}: ${value}`)
  })
})

describe('cookie sessions in Redis: two replicas and a restart', { skip: backendMissing }, () => {
  let skipReason: string | undefined
  let backend: SupabaseAuthServer
  let a: Gateway
  let b: Gateway
  let publicUrl = ''
  const keyPrefix = `authgate:e2e-session:${Date.now()}:`
  const sessions = (): SessionOptions => ({
    mode: 'on',
    keys: [{ id: 'k1', key: KEY }],
    store: { kind: 'redis', url: 'redis://127.0.0.1:6379', keyPrefix, timeoutMs: 2000 },
  })
  const KEY = randomBytes(32)
  const replica = (port = 0) =>
    startGateway(backend, {
      port,
      prefix: '/auth',
      sessions: sessions(),
      protect: { issuer: publicUrl },
      beforeListen: appRoutes,
    })

  before(async () => {
    skipReason = await redisUnavailableReason()
    if (skipReason) return
    const reservation = await reservePort()
    publicUrl = `http://localhost:${reservation.port}/auth`
    backend = await startSupabaseAuth({
      publicUrl,
      database: 'authgate_e2e_sessions_redis',
      extraEnv: { GOTRUE_JWT_EXP: String(TOKEN_LIFETIME_SECONDS), GOTRUE_LOG_LEVEL: 'info' },
    })
    await reservation.release()
    a = await replica(reservation.port)
    b = await replica()
  })

  after(async () => {
    try {
      await a?.close()
      await b?.close()
    } finally {
      await backend?.stop()
    }
  })

  let cookie = ''
  const me = (gateway: Gateway) => fetch(`${gateway.url}/api/me`, { headers: { cookie } })

  it('a session made on one replica is served by the other', async (t) => {
    if (skipReason) return t.skip(skipReason)
    const email = `replica-${Date.now()}@example.com`
    const up = await fetch(`${a.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    assert.equal(up.status, 200)
    const body = (await up.json()) as Record<string, unknown>
    assert.ok(a.app.authgate.sessions!.sessions.standIns.isAccess(String(body.access_token)))
    cookie = up.headers.get('set-cookie')!.split(';')[0]!
    assert.match(cookie, /^__Host-authgate-session=[A-Za-z0-9_-]{43}$/)
    const res = await me(b)
    assert.equal(res.status, 200)
    assert.equal(((await res.json()) as { email: string }).email, email)
  })

  it('after expiry, concurrent requests on both replicas make one refresh (the lock in Redis)', async (t) => {
    if (skipReason) return t.skip(skipReason)
    const id = cookie.split('=')[1]!
    const before = await a.app.authgate.sessions!.sessions.load(id)
    assert.ok(before)
    while (Date.now() < before.session.expiresAt * 1000 + 250) await sleep(100)
    const tokensBefore = await tokenRequests(backend)
    const refreshes = () => a.app.authgate.sessions!.sessions.refreshes + b.app.authgate.sessions!.sessions.refreshes
    const refreshesBefore = refreshes()
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => me(i % 2 === 0 ? a : b)))
    assert.deepEqual(
      answers.map((r) => r.status),
      Array(10).fill(200),
    )
    await Promise.all(answers.map((r) => r.body?.cancel()))
    assert.equal((await tokenRequests(backend)) - tokensBefore, 1)
    assert.equal(refreshes() - refreshesBefore, 1)
  })

  it('a restarted replica loses no session', async (t) => {
    if (skipReason) return t.skip(skipReason)
    const port = a.port
    await a.close()
    a = await replica(port)
    const res = await me(a)
    assert.equal(res.status, 200)
    await res.body?.cancel()
  })
})

describe('every session-carrying route of Supabase Auth answers the cookie', { skip: backendMissing }, () => {
  let stack: Stack
  const headers = { 'content-type': 'application/json' }

  before(async () => {
    stack = await startStack({
      database: 'authgate_e2e_sessions_routes',
      sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }] },
    })
  })
  after(() => stack?.stop())

  /** A cookie-mode answer: 200, no token in the JSON, a new session cookie. */
  async function cookieAnswer(res: Response): Promise<{ cookie: string; body: Record<string, unknown> }> {
    const text = await res.text()
    assert.equal(res.status, 200, text)
    const standIns = stack.app.authgate.sessions!.sessions.standIns
    const parsed = JSON.parse(text) as { access_token?: string; refresh_token?: string }
    assert.ok(standIns.isAccess(String(parsed.access_token)), 'the access token is a stand-in')
    assert.ok(standIns.isRefresh(String(parsed.refresh_token)), 'the refresh token is a stand-in')
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!
    assert.match(cookie, /^__Host-authgate-session=[A-Za-z0-9_-]{43}$/)
    return { cookie, body: JSON.parse(text) as Record<string, unknown> }
  }
  const session = async (cookie: string) => {
    const res = await fetch(`${stack.url}/auth/session`, { headers: { cookie } })
    return { status: res.status, body: (await res.json()) as { user?: Record<string, unknown> } }
  }

  it('anonymous sign-in (sign-up without e-mail or phone)', async () => {
    const { cookie } = await cookieAnswer(
      await fetch(`${stack.url}/auth/signup`, { method: 'POST', headers, body: '{}' }),
    )
    const { status, body } = await session(cookie)
    assert.equal(status, 200)
    assert.equal(body.user?.is_anonymous, true)
  })

  it("the refresh_token grant: a page's existing session moves into the cookie", async () => {
    const email = `moving-${Date.now()}@example.com`
    await cookieAnswer(
      await fetch(`${stack.url}/auth/signup`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ email, password: PASSWORD }),
      }),
    )
    // Tokens a page got before cookie mode (straight from Supabase Auth here).
    const direct = await fetch(`${stack.backend.url}/token?grant_type=password`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    const { refresh_token } = (await direct.json()) as { refresh_token: string }
    const { cookie } = await cookieAnswer(
      await fetch(`${stack.url}/auth/token?grant_type=refresh_token`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ refresh_token }),
      }),
    )
    assert.equal((await session(cookie)).body.user?.email, email)
  })

  it('an e-mail link verified by its token_hash', async () => {
    const email = `link-${Date.now()}@example.com`
    await cookieAnswer(
      await fetch(`${stack.url}/auth/signup`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ email, password: PASSWORD }),
      }),
    )
    const link = await fetch(`${stack.backend.url}/admin/generate_link`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${stack.backend.serviceRoleJwt()}` },
      body: JSON.stringify({ type: 'magiclink', email }),
    })
    assert.equal(link.status, 200)
    const { hashed_token } = (await link.json()) as { hashed_token: string }
    const { cookie } = await cookieAnswer(
      await fetch(`${stack.url}/auth/verify`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ type: 'magiclink', token_hash: hashed_token }),
      }),
    )
    assert.equal((await session(cookie)).body.user?.email, email)
  })

  it('an e-mail link followed in the browser (GET /verify): the cookie, and a fragment with stand-ins', async () => {
    const email = `magic-${Date.now()}@example.com`
    await cookieAnswer(
      await fetch(`${stack.url}/auth/signup`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ email, password: PASSWORD }),
      }),
    )
    const link = await fetch(`${stack.backend.url}/admin/generate_link`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${stack.backend.serviceRoleJwt()}` },
      body: JSON.stringify({ type: 'magiclink', email, redirect_to: 'http://localhost:3000/welcome' }),
    })
    const { action_link } = (await link.json()) as { action_link: string }
    const target = new URL(action_link)
    const res = await fetch(`${stack.url}${target.pathname}${target.search}`, { redirect: 'manual' })
    assert.equal(res.status, 303)
    const location = res.headers.get('location') ?? ''
    assert.match(location, /^http:\/\/localhost:3000\/welcome#/)
    const fragment = new URLSearchParams(new URL(location).hash.slice(1))
    assert.ok(stack.app.authgate.sessions!.sessions.standIns.isAccess(fragment.get('access_token') ?? ''))
    assert.match(fragment.get('refresh_token') ?? '', /^agr\./)
    assert.match(location, /type=magiclink/)
    const body = await res.text()
    assert.doesNotMatch(body.replace(location.replaceAll('&', '&amp;'), ''), /access_token|refresh_token/)
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!
    assert.equal((await session(cookie)).body.user?.email, email)
  })

  it('the PKCE grant: a magic link with ?code= exchanged for the cookie', async () => {
    const email = `pkce-${Date.now()}@example.com`
    await cookieAnswer(
      await fetch(`${stack.url}/auth/signup`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ email, password: PASSWORD }),
      }),
    )
    const verifier = randomBytes(32).toString('base64url')
    const challenge = createHash('sha256').update(verifier).digest('base64url')
    const otp = await fetch(`${stack.url}/auth/otp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ email, code_challenge: challenge, code_challenge_method: 's256' }),
    })
    assert.equal(otp.status, 200, await otp.text())
    // The link's token, as the e-mail would carry it (no mail server here).
    const token = await runPsql(
      postgresTarget(),
      stack.backend.database,
      `SELECT recovery_token FROM auth.users WHERE email = '${email}'`,
    )
    assert.match(token, /^pkce_/)
    const link = await fetch(
      `${stack.url}/auth/verify?token=${token}&type=magiclink&redirect_to=${encodeURIComponent('http://localhost:3000/cb')}`,
      { redirect: 'manual' },
    )
    assert.equal(link.status, 303)
    const code = new URL(link.headers.get('location') ?? '').searchParams.get('code')
    assert.ok(code, link.headers.get('location') ?? '')
    assert.equal(link.headers.get('set-cookie'), null)
    const { cookie } = await cookieAnswer(
      await fetch(`${stack.url}/auth/token?grant_type=pkce`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ auth_code: code, code_verifier: verifier }),
      }),
    )
    assert.equal((await session(cookie)).body.user?.email, email)
  })

  it('MFA verify with the cookie raises the session to aal2 under a new cookie; the old one ends', async () => {
    const email = `mfa-${Date.now()}@example.com`
    const { cookie } = await cookieAnswer(
      await fetch(`${stack.url}/auth/signup`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ email, password: PASSWORD }),
      }),
    )
    const own = { ...headers, cookie, origin: stack.url }
    const enrolled = await fetch(`${stack.url}/auth/factors`, {
      method: 'POST',
      headers: own,
      body: JSON.stringify({ factor_type: 'totp', friendly_name: 'phone' }),
    })
    assert.equal(enrolled.status, 200)
    const factor = (await enrolled.json()) as { id: string; totp: { secret: string } }
    const challenge = await fetch(`${stack.url}/auth/factors/${factor.id}/challenge`, {
      method: 'POST',
      headers: own,
      body: '{}',
    })
    assert.equal(challenge.status, 200)
    const { id: challengeId } = (await challenge.json()) as { id: string }
    const verified = await cookieAnswer(
      await fetch(`${stack.url}/auth/factors/${factor.id}/verify`, {
        method: 'POST',
        headers: own,
        body: JSON.stringify({ challenge_id: challengeId, code: totp(factor.totp.secret) }),
      }),
    )
    assert.notEqual(verified.cookie, cookie)
    assert.equal((await session(cookie)).status, 401)
    const stored = await stack.app.authgate.sessions!.sessions.load(verified.cookie.split('=')[1]!)
    const claims = JSON.parse(Buffer.from(stored!.session.accessToken.split('.')[1]!, 'base64url').toString()) as {
      aal: string
    }
    assert.equal(claims.aal, 'aal2')
    const user = await fetch(`${stack.url}/auth/user`, { headers: { cookie: verified.cookie } })
    assert.equal(user.status, 200)
    assert.equal(((await user.json()) as { factors: Array<{ status: string }> }).factors[0]?.status, 'verified')
  })
})

describe('signed out elsewhere: the cookie session ends here too', { skip: backendMissing }, () => {
  let backend: SupabaseAuthServer
  let gateway: Gateway
  const email = `elsewhere-${Date.now()}@example.com`
  /** Short, so that the test sees the protected route ask Supabase Auth; the default is a minute. */
  const REVALIDATE_MS = 1000

  before(async () => {
    const reservation = await reservePort()
    const publicUrl = `http://localhost:${reservation.port}/auth`
    backend = await startSupabaseAuth({ publicUrl, database: 'authgate_e2e_sessions_elsewhere' })
    await reservation.release()
    gateway = await startGateway(backend, {
      port: reservation.port,
      prefix: '/auth',
      sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }], revalidateMs: REVALIDATE_MS },
      protect: { issuer: publicUrl },
      beforeListen: appRoutes,
    })
    const up = await fetch(`${gateway.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    assert.equal(up.status, 200, await up.text())
  })

  after(async () => {
    try {
      await gateway?.close()
    } finally {
      await backend?.stop()
    }
  })

  /** A cookie session signed in through authgate. */
  async function cookieSession(): Promise<string> {
    const res = await fetch(`${gateway.url}/auth/token?grant_type=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    assert.equal(res.status, 200, await res.text())
    return res.headers.get('set-cookie')!.split(';')[0]!
  }

  /** Another device signs in and signs every session of the user out (`scope=global`). */
  async function globalSignOutElsewhere(): Promise<void> {
    const other = await fetch(`${backend.url}/token?grant_type=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    const { access_token } = (await other.json()) as { access_token: string }
    const out = await fetch(`${backend.url}/logout?scope=global`, {
      method: 'POST',
      headers: { authorization: `Bearer ${access_token}` },
    })
    assert.equal(out.status, 204)
  }

  const get = (cookie: string, path: string) => fetch(`${gateway.url}${path}`, { headers: { cookie } })
  const stored = (cookie: string) => gateway.app.authgate.sessions!.sessions.load(cookie.split('=')[1]!)

  it('a forwarded request answered session_not_found ends the session at once', async () => {
    const cookie = await cookieSession()
    assert.equal((await get(cookie, '/auth/user')).status, 200)
    await globalSignOutElsewhere()
    const user = await get(cookie, '/auth/user')
    assert.equal(user.status, 403)
    assert.equal(((await user.json()) as { error_code: string }).error_code, 'session_not_found')
    assert.match(user.headers.get('set-cookie') ?? '', /^__Host-authgate-session=; .*Max-Age=0/)
    assert.equal(await stored(cookie), undefined)
    const session = await get(cookie, '/auth/session')
    assert.equal(session.status, 401)
    await session.body?.cancel()
    const me = await get(cookie, '/api/me')
    assert.equal(me.status, 401)
    await me.body?.cancel()
  })

  it("the application's protected route and /session ask Supabase Auth once the interval has passed", async () => {
    for (const path of ['/api/me', '/auth/session']) {
      const cookie = await cookieSession()
      const ok = await get(cookie, path)
      assert.equal(ok.status, 200, path)
      await ok.body?.cancel()
      await globalSignOutElsewhere()
      await sleep(REVALIDATE_MS + 100)
      const ended = await get(cookie, path)
      assert.equal(ended.status, 401, path)
      await ended.body?.cancel()
      assert.match(ended.headers.get('set-cookie') ?? '', /Max-Age=0/)
      assert.equal(await stored(cookie), undefined)
    }
  })
})

describe('identity linking with the cookie leads only to a cookie, in Chromium', { skip: browserMissing }, () => {
  let stack: Stack
  let browser: Browser
  let page: Page

  before(async () => {
    stack = await startStack({
      database: 'authgate_e2e_sessions_linking',
      sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }] },
      extraEnv: { GOTRUE_SECURITY_MANUAL_LINKING_ENABLED: 'true' },
    })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await stack?.stop()
  })

  /** A page on authgate's origin, signed up there: the browser holds the cookie and sends its own headers. */
  async function signedUpPage(email: string): Promise<Page> {
    page = await (await browser.newContext()).newPage()
    await page.goto(`${stack.publicOrigin}/auth/settings`)
    const up = await send('/auth/signup', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    assert.equal(up.status, 200, up.text)
    return page
  }
  /** A request the page makes with fetch (same origin: the cookie goes with it). */
  const send = (path: string, init: Record<string, unknown> = {}) =>
    page.evaluate(
      async ([p, i]) => {
        const res = await fetch(p, i as RequestInit)
        return { status: res.status, text: await res.text() }
      },
      [path, init] as const,
    )
  const errorCode = (answer: { text: string }) => (JSON.parse(answer.text) as { error_code: string }).error_code

  it('without PKCE it is refused before Supabase Auth; with PKCE Supabase Auth starts it', async () => {
    await signedUpPage(`linking-${Date.now()}@example.com`)
    try {
      const implicit = await send('/auth/user/identities/authorize?provider=github&skip_http_redirect=true')
      assert.equal(implicit.status, 403)
      assert.equal(errorCode(implicit), 'session_cookie_refused')
      const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url')
      const pkce = await send(
        `/auth/user/identities/authorize?provider=github&skip_http_redirect=true&code_challenge=${challenge}&code_challenge_method=s256`,
      )
      assert.equal(pkce.status, 200, pkce.text)
      assert.match((JSON.parse(pkce.text) as { url: string }).url, /^https:\/\/github\.com\/login\/oauth\/authorize\?/)
    } finally {
      await page.context().close()
    }
  })

  it('the challenge is the one Supabase Auth reads: a pair Go drops is no PKCE, an encoded name is', async () => {
    const email = `linking-query-${Date.now()}@example.com`
    await signedUpPage(email)
    try {
      // The real token, from Supabase Auth itself: what it does with each query, with no authgate in between.
      const direct = await fetch(`${stack.backend.url}/token?grant_type=password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      })
      const { access_token: real } = (await direct.json()) as { access_token: string }
      const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url')
      const linkUrl = (base: string, query: string) =>
        `${base}/user/identities/authorize?provider=github&skip_http_redirect=true&${query}`
      /** Whether Supabase Auth started the PKCE flow: the flow state its `state` names holds the challenge. */
      const flow = async (answer: { status: number; text: string }) => {
        assert.equal(answer.status, 200, answer.text)
        const state = new URL((JSON.parse(answer.text) as { url: string }).url).searchParams.get('state') ?? ''
        assert.match(state, /^[0-9a-f-]{36}$/)
        const stored = await runPsql(
          postgresTarget(),
          stack.backend.database,
          `SELECT coalesce(code_challenge, '') FROM auth.flow_state WHERE id = '${state}'`,
        )
        return stored === challenge ? 'pkce' : stored === '' ? 'implicit' : `another challenge: ${stored}`
      }
      const directly = async (query: string) => {
        const res = await fetch(linkUrl(stack.backend.url, query), { headers: { authorization: `Bearer ${real}` } })
        return { status: res.status, text: await res.text() }
      }
      const refusedQueries = [
        `code_challenge=${challenge};`,
        `code_challenge=${challenge}%`,
        `code_challenge=%zz${challenge}`,
        `code_challenge%3D${challenge}`,
        `code_challenge=${challenge};&code_challenge=`,
      ]
      for (const query of refusedQueries) {
        // Supabase Auth reads no challenge there: with the real token it starts the implicit flow,
        // whose callback puts the tokens in the page's URL (with a method and no challenge it
        // answers 400 instead).
        assert.equal(await flow(await directly(query)), 'implicit', query)
        const answer = await send(linkUrl('/auth', query))
        assert.equal(answer.status, 403, query)
        assert.equal(errorCode(answer), 'session_cookie_refused', query)
      }
      for (const query of [
        `code%5Fchallenge=${challenge}&code_challenge_method=s256`,
        `code_challenge=%zz&code_challenge=${challenge}&code_challenge_method=s256`,
        `code_challenge=${challenge}&code_challenge=&code_challenge_method=s256`,
      ]) {
        assert.equal(await flow(await directly(query)), 'pkce', query)
        assert.equal(await flow(await send(linkUrl('/auth', query))), 'pkce', query)
      }
    } finally {
      await page.context().close()
    }
  })

  it("the page's refresh is the grant Go reads: `grant_type=%zz&grant_type=refresh_token` refreshes through the cookie", async () => {
    const email = `linking-refresh-${Date.now()}@example.com`
    await signedUpPage(email)
    try {
      const signIn = await send('/auth/token?grant_type=password', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      })
      assert.equal(signIn.status, 200, signIn.text)
      const { refresh_token: standIn } = JSON.parse(signIn.text) as { refresh_token: string }
      // Go drops `grant_type=%zz` and reads refresh_token: authgate refreshes with the real token
      // (Supabase Auth would refuse the stand-in) and answers the same stand-in.
      const refreshed = await send('/auth/token?grant_type=%zz&grant_type=refresh_token', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refresh_token: standIn }),
      })
      assert.equal(refreshed.status, 200, refreshed.text)
      assert.equal((JSON.parse(refreshed.text) as { refresh_token: string }).refresh_token, standIn)
    } finally {
      await page.context().close()
    }
  })
})

describe('key rotation: a stand-in of a removed key is refused, nothing forwarded', { skip: backendMissing }, () => {
  let skipReason: string | undefined
  let backend: SupabaseAuthServer
  const keyPrefix = `authgate:e2e-rotation:${Date.now()}:`
  const ka = { id: 'ka', key: randomBytes(32) }
  const kb = { id: 'kb', key: randomBytes(32) }
  const gateway = (keys: Array<{ id: string; key: Buffer }>) =>
    startGateway(backend, {
      prefix: '/auth',
      sessions: {
        mode: 'on',
        keys,
        store: { kind: 'redis', url: 'redis://127.0.0.1:6379', keyPrefix, timeoutMs: 2000 },
      },
    })

  before(async () => {
    skipReason = await redisUnavailableReason()
    if (skipReason) return
    backend = await startSupabaseAuth({
      publicUrl: 'http://localhost:9/auth',
      database: 'authgate_e2e_sessions_rotation',
      extraEnv: { GOTRUE_LOG_LEVEL: 'info' },
    })
  })
  after(() => backend?.stop())

  it("after AUTHGATE_SESSION_KEYS drops `ka`, a page's `ka` stand-in gets 401 bad_jwt and Supabase Auth sees nothing", async (t) => {
    if (skipReason) return t.skip(skipReason)
    // Signed in under `ka`; then `kb` first, `ka` kept: the session is sealed again with `kb` on use.
    const first = await gateway([ka])
    const signedUp = await (async () => {
      try {
        const up = await fetch(`${first.url}/auth/signup`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: `rotation-${Date.now()}@example.com`, password: PASSWORD }),
        })
        assert.equal(up.status, 200)
        const body = (await up.json()) as { access_token: string }
        return { cookie: up.headers.get('set-cookie')!.split(';')[0]!, standIn: body.access_token }
      } finally {
        await first.close()
      }
    })()
    const { cookie, standIn } = signedUp
    const rotated = await gateway([kb, ka])
    try {
      const user = await fetch(`${rotated.url}/auth/user`, { headers: { cookie, authorization: `Bearer ${standIn}` } })
      assert.equal(user.status, 200, 'still taken while `ka` is listed')
      await user.body?.cancel()
    } finally {
      await rotated.close()
    }
    // `ka` removed: the session lives on under `kb`; the page's old stand-in is refused here.
    const last = await gateway([kb])
    try {
      const before = loggedRequests(backend.logs()).filter((r) => r.path === '/user').length
      const bearer: Record<string, string> = { authorization: `Bearer ${standIn}` }
      for (const headers of [{ ...bearer, cookie }, bearer]) {
        const res = await fetch(`${last.url}/auth/user`, { headers })
        assert.equal(res.status, 401)
        assert.equal(((await res.json()) as { error_code: string }).error_code, 'bad_jwt')
      }
      await afterBackendLogged(
        backend.logs,
        (r) => r.path === '/settings',
        async () => {
          const res = await fetch(`${backend.url}/settings`)
          await res.body?.cancel()
        },
      )
      assert.equal(
        loggedRequests(backend.logs()).filter((r) => r.path === '/user').length,
        before,
        "Supabase Auth's log: no /user",
      )
      const cookieOnly = await fetch(`${last.url}/auth/user`, { headers: { cookie } })
      assert.equal(cookieOnly.status, 200, 'the session itself is kept')
      await cookieOnly.body?.cancel()
    } finally {
      await last.close()
    }
  })
})
