import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, beforeEach, describe, it, mock } from 'node:test'
import { SignJWT } from 'jose'
import type { LightMyRequestResponse } from 'fastify'
import { defineRoute } from '../../src/routes-dsl/define-route.ts'
import { sessionHandle } from '../../src/sessions/crypto.ts'
import { MemorySessionStore } from '../../src/sessions/memory-store.ts'
import { StandIns } from '../../src/sessions/stand-ins.ts'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'
import { startFakeBackend } from '../support/fake-backend.ts'

const SECRET = 'super-secret-jwt-token-with-at-least-32-characters'
const ISSUER = 'http://localhost/auth'
const HOST = 'api.example.com'
const OWN = `http://${HOST}`
const KEY = { id: 'k1', key: randomBytes(32) }

async function accessToken(n: number): Promise<string> {
  return new SignJWT({ role: 'authenticated', aal: 'aal1', email: `user${n}@example.com`, session_id: 's1' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('8d0b1f0e-5c4e-4a5e-9a44-0b0b6f4c3b11')
    .setAudience('authenticated')
    .setIssuer(ISSUER)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(SECRET))
}

const AUTHORIZATION = 'ppb3djtqzpsdmxbi7lhkgusc4cpj35ur'
const NAVIGATION = { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'same-origin', 'sec-fetch-dest': 'document' }
const SESSION_NOT_FOUND =
  '{"code":403,"error_code":"session_not_found","msg":"Session from session_id claim in JWT does not exist"}'

/** Runs `run` with the clock `ms` ahead (Date only: timers, sockets and the store's TTLs stay real). */
async function later<T>(ms: number, run: () => Promise<T>): Promise<T> {
  mock.timers.enable({ apis: ['Date'], now: Date.now() + ms })
  try {
    return await run()
  } finally {
    mock.timers.reset()
  }
}

const cookieOf = (res: LightMyRequestResponse) => {
  const header = res.headers['set-cookie']
  return (Array.isArray(header) ? header[0] : header) ?? ''
}

describe('cookie sessions through the mounted routes and the protect hook', () => {
  let h: Harness
  let issued = 0
  let store: MemorySessionStore

  before(async () => {
    store = new MemorySessionStore()
    const backend = await startFakeBackend()
    const app = await buildApp({
      rateLimit: false,
      config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0 },
      sessions: { mode: 'request', keys: [KEY], allowedOrigins: ['https://app.example.com'] },
      sessionStore: store,
      protect: { issuer: ISSUER, secret: SECRET, jwks: false },
    })
    h = {
      app,
      backend,
      close: async () => {
        await app.close()
        await backend.close()
      },
    }
    h.app.route(
      defineRoute({
        method: 'GET',
        url: '/me',
        auth: 'required',
        handler: async (req) => ({ email: req.user?.email, header: req.headers.authorization?.slice(0, 7) }),
      }),
    )
    h.app.route(defineRoute({ method: 'POST', url: '/notes', auth: 'required', handler: async () => ({ ok: true }) }))
    await app.ready()
  })
  after(() => h.close())

  beforeEach(() => {
    h.backend.requests.length = 0
    h.backend.handler = (req, res) => {
      const path = (req.url ?? '').split('?')[0]
      if (path === '/token' || path?.endsWith('/verify')) {
        void accessToken(++issued).then((token) => {
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(
            JSON.stringify({
              access_token: token,
              refresh_token: `refresh-${issued}`,
              token_type: 'bearer',
              expires_in: 3600,
              expires_at: Math.floor(Date.now() / 1000) + 3600,
              user: { id: 'u1', email: `user${issued}@example.com` },
            }),
          )
        })
        return
      }
      if (path === '/logout') return void res.writeHead(204).end()
      if (path === '/signup') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return void res.end('{"id":"u2","email":"pending@example.com"}')
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ authorization: req.headers.authorization ?? null }))
    }
  })

  const signIn = (headers: Record<string, string> = { 'x-authgate-session': 'cookie' }) =>
    h.app.inject({
      method: 'POST',
      url: '/auth/token?grant_type=password',
      headers: { 'content-type': 'application/json', host: HOST, ...headers },
      payload: '{"email":"a@example.com","password":"secret123"}',
    })
  const withCookie = (cookie: string, method: string, url: string, headers: Record<string, string> = {}) =>
    h.app.inject({ method: method as 'GET', url, headers: { host: HOST, cookie: cookie.split(';')[0]!, ...headers } })
  async function signedIn(): Promise<string> {
    const res = await signIn()
    assert.equal(res.statusCode, 200, res.body)
    return cookieOf(res)
  }

  it('request mode: without the header a session answer keeps its tokens and sets no cookie', async () => {
    const res = await signIn({})
    assert.equal(res.statusCode, 200)
    assert.equal(typeof res.json().access_token, 'string')
    assert.equal(res.headers['set-cookie'], undefined)
  })

  it('with the header: the cookie, and the answer with stand-ins for the tokens', async () => {
    const res = await signIn()
    assert.equal(res.statusCode, 200)
    const body = res.json() as Record<string, unknown>
    assert.deepEqual(Object.keys(body).sort(), [
      'access_token',
      'expires_at',
      'expires_in',
      'refresh_token',
      'token_type',
      'user',
    ])
    const stored = await h.app.authgate.sessions!.sessions.load(cookieOf(res).split(';')[0]!.split('=')[1]!)
    assert.notEqual(body.access_token, stored!.session.accessToken)
    assert.notEqual(body.refresh_token, stored!.session.refreshToken)
    assert.ok(h.app.authgate.sessions!.sessions.standIns.isAccess(String(body.access_token)))
    assert.match(String(body.refresh_token), /^agr\./)
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(res.body)))
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.match(
      cookieOf(res),
      /^__Host-authgate-session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=604800; HttpOnly; Secure; SameSite=Lax$/,
    )
  })

  it('a sign-in over an older cookie replaces it; the old session is forgotten', async () => {
    const first = await signedIn()
    const res = await signIn({ 'x-authgate-session': 'cookie', cookie: first.split(';')[0]! })
    assert.equal(res.statusCode, 200)
    assert.notEqual(cookieOf(res).split(';')[0], first.split(';')[0])
    assert.equal((await withCookie(first, 'GET', '/auth/session')).statusCode, 401)
  })

  it('answers that carry no session are relayed as they are', async () => {
    h.backend.handler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end('{"code":400,"error_code":"invalid_credentials","msg":"Invalid login credentials"}')
    }
    const refused = await signIn()
    assert.equal(refused.statusCode, 400)
    assert.equal(refused.json().error_code, 'invalid_credentials')
    assert.equal(refused.headers['set-cookie'], undefined)
  })

  it('a sign-up awaiting confirmation is relayed as it is', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/signup',
      headers: { 'content-type': 'application/json', 'x-authgate-session': 'cookie', host: HOST },
      payload: '{"email":"a@example.com","password":"secret123"}',
    })
    assert.deepEqual(res.json(), { id: 'u2', email: 'pending@example.com' })
    assert.equal(res.headers['set-cookie'], undefined)
  })

  it('a bearer route gets the bearer of the cookie; a request with its own bearer keeps it', async () => {
    const cookie = await signedIn()
    const user = await withCookie(cookie, 'GET', '/auth/user')
    assert.match(String(user.json().authorization), /^Bearer ey/)
    const own = await withCookie(cookie, 'GET', '/auth/user', { authorization: 'Bearer mine' })
    assert.equal(own.json().authorization, 'Bearer mine')
  })

  it('the session cookie stays with authgate: Supabase Auth gets the bearer and the other cookies', async () => {
    const session = (await signedIn()).split(';')[0]!
    const res = await h.app.inject({
      method: 'GET',
      url: '/auth/user',
      headers: { host: HOST, cookie: `theme=dark; ${session}; lang=en` },
    })
    assert.equal(res.statusCode, 200)
    const sent = h.backend.requests.at(-1)!
    assert.equal(sent.headers.cookie, 'theme=dark; lang=en')
    assert.match(String(sent.headers.authorization), /^Bearer ey/)
    await h.app.inject({ method: 'GET', url: '/auth/user', headers: { host: HOST, cookie: session } })
    assert.equal(h.backend.requests.at(-1)!.headers.cookie, undefined, 'no Cookie header when it was the only one')
  })

  it('GET /session: the user and the end of the session; 401 without one', async () => {
    const cookie = await signedIn()
    const res = await withCookie(cookie, 'GET', '/auth/session')
    assert.equal(res.statusCode, 200)
    const body = res.json() as { user: { id: string }; expires_at: number }
    assert.equal(body.user.id, 'u1')
    assert.ok(body.expires_at > Date.now() / 1000)
    const none = await h.app.inject({ method: 'GET', url: '/auth/session' })
    assert.equal(none.statusCode, 401)
    assert.equal(none.json().error_code, 'no_session')
    assert.equal(none.headers['set-cookie'], undefined)
    const unknown = await withCookie(`__Host-authgate-session=${'a'.repeat(43)}`, 'GET', '/auth/session')
    assert.equal(unknown.statusCode, 401)
    assert.match(cookieOf(unknown), /Max-Age=0/)
  })

  it('an ended session: the cookie is cleared and the request goes on without credentials', async () => {
    const res = await withCookie(`__Host-authgate-session=${'b'.repeat(43)}`, 'GET', '/auth/user')
    assert.equal(res.json().authorization, null)
    assert.match(cookieOf(res), /Max-Age=0/)
  })

  it('cookie-authenticated unsafe requests need an allowed Origin: 403 in our shape, nothing forwarded', async () => {
    const cookie = await signedIn()
    for (const headers of [
      {} as Record<string, string>,
      { origin: 'https://evil.example.com' },
      { origin: OWN, 'sec-fetch-site': 'cross-site' },
    ]) {
      const res = await withCookie(cookie, 'POST', '/auth/logout', headers)
      assert.equal(res.statusCode, 403)
      assert.equal(res.json().error_code, 'cross_site_request')
      assert.equal(res.headers['x-sb-error-code'], 'cross_site_request')
    }
    assert.equal(h.backend.requests.filter((r) => r.target.startsWith('/logout')).length, 0)
    const app = await withCookie(cookie, 'POST', '/notes', { origin: 'https://evil.example.com' })
    assert.equal(app.statusCode, 403)
    // The same request with a bearer header is not cookie-authenticated: no check.
    const bearer = await withCookie(cookie, 'POST', '/auth/logout', { authorization: 'Bearer mine' })
    assert.equal(bearer.statusCode, 204)
  })

  it('a GET that changes state gets the cross-site check: a navigation from another site is refused', async () => {
    const cookie = await signedIn()
    h.backend.requests.length = 0
    for (const headers of [
      { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' },
      { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' },
      {} as Record<string, string>,
      { origin: 'https://evil.example.com', 'sec-fetch-site': 'cross-site' },
    ]) {
      for (const url of ['/auth/reauthenticate', '/auth/user/identities/authorize?provider=github']) {
        const res = await withCookie(cookie, 'GET', url, headers)
        assert.equal(res.statusCode, 403, `${url} ${JSON.stringify(headers)}`)
        assert.equal(res.json().error_code, 'cross_site_request')
      }
    }
    assert.equal(h.backend.requests.length, 0, 'nothing forwarded: no reauthentication code was sent')
    for (const headers of [{ 'sec-fetch-site': 'same-origin' }, { origin: 'https://app.example.com' }] as Array<
      Record<string, string>
    >) {
      const own = await withCookie(cookie, 'GET', '/auth/reauthenticate', headers)
      assert.equal(own.statusCode, 200, own.body)
      assert.match(String(own.json().authorization), /^Bearer ey/)
    }
    // A GET that only reads is not checked; nor is a request with its own bearer.
    const read = await withCookie(cookie, 'GET', '/auth/user', { 'sec-fetch-site': 'cross-site' })
    assert.equal(read.statusCode, 200)
    const bearer = await withCookie(cookie, 'GET', '/auth/reauthenticate', {
      authorization: 'Bearer mine',
      'sec-fetch-site': 'cross-site',
    })
    assert.equal(bearer.json().authorization, 'Bearer mine')
  })

  it('the OAuth consent routes refuse the cookie by default: nothing forwarded, the page gets no code', async () => {
    const cookie = await signedIn()
    h.backend.requests.length = 0
    const details = await withCookie(cookie, 'GET', `/auth/oauth/authorizations/${AUTHORIZATION}`, NAVIGATION)
    assert.equal(details.statusCode, 403)
    assert.equal(details.json().error_code, 'session_cookie_refused')
    assert.match(details.json().msg, /AUTHGATE_SESSION_OAUTH_CONSENT is off/)
    const consent = await h.app.inject({
      method: 'POST',
      url: `/auth/oauth/authorizations/${AUTHORIZATION}/consent`,
      headers: { host: HOST, cookie: cookie.split(';')[0]!, origin: OWN, 'content-type': 'application/json' },
      payload: '{"action":"approve"}',
    })
    assert.equal(consent.statusCode, 403)
    assert.equal(consent.json().error_code, 'session_cookie_refused')
    assert.equal(h.backend.requests.length, 0)
    // A consent page with the user's own bearer (not cookie mode) is forwarded as before.
    const own = await withCookie(cookie, 'GET', `/auth/oauth/authorizations/${AUTHORIZATION}`, {
      authorization: 'Bearer mine',
    })
    assert.equal(own.json().authorization, 'Bearer mine')
    // The grants of the user stay readable with the cookie: they carry no code.
    assert.equal((await withCookie(cookie, 'GET', '/auth/user/oauth/grants')).statusCode, 200)
  })

  it('request mode: identity linking does not take the cookie (its code could be exchanged for tokens)', async () => {
    const cookie = await signedIn()
    h.backend.requests.length = 0
    const url = '/auth/user/identities/authorize?provider=github&code_challenge=abc&code_challenge_method=s256'
    const res = await withCookie(cookie, 'GET', url, { 'sec-fetch-site': 'same-origin' })
    assert.equal(res.statusCode, 403)
    assert.equal(res.json().error_code, 'session_cookie_refused')
    assert.match(res.json().msg, /request` mode/)
    assert.equal(h.backend.requests.length, 0)
    const bearer = await withCookie(cookie, 'GET', url, { authorization: 'Bearer mine' })
    assert.equal(bearer.json().authorization, 'Bearer mine')
  })

  it('signed out elsewhere: a forwarded session_not_found ends the session here at once', async () => {
    const ordinary = h.backend.handler
    for (const body of [
      SESSION_NOT_FOUND,
      '{"code":"user_not_found","message":"User from sub claim in JWT does not exist"}',
    ]) {
      h.backend.handler = ordinary
      const cookie = await signedIn()
      const handle = sessionHandle(cookie.split(';')[0]!.split('=')[1]!)
      h.backend.handler = (_req, res) => res.writeHead(403, { 'content-type': 'application/json' }).end(body)
      const res = await withCookie(cookie, 'GET', '/auth/user')
      assert.equal(res.statusCode, 403)
      assert.equal(res.body, body, "Supabase Auth's answer, as it is")
      assert.match(cookieOf(res), /^__Host-authgate-session=; .*Max-Age=0/)
      assert.equal(await store.get(handle), undefined)
      assert.equal((await withCookie(cookie, 'GET', '/auth/session')).statusCode, 401)
      assert.equal((await withCookie(cookie, 'GET', '/me')).statusCode, 401)
    }
    // Other refusals leave the session alone.
    h.backend.handler = ordinary
    const cookie = await signedIn()
    h.backend.handler = (_req, res) =>
      res.writeHead(403, { 'content-type': 'application/json' }).end('{"code":403,"error_code":"insufficient_aal"}')
    const refused = await withCookie(cookie, 'GET', '/auth/user')
    assert.equal(refused.statusCode, 403)
    assert.equal(refused.headers['set-cookie'], undefined)
    h.backend.handler = (_req, res) => res.writeHead(403).end('not json')
    await withCookie(cookie, 'GET', '/auth/user')
    assert.equal((await withCookie(cookie, 'GET', '/auth/session')).statusCode, 200)
  })

  it('signed out elsewhere: once AUTHGATE_SESSION_REVALIDATE has passed, the protected route and /session ask first', async () => {
    const ordinary = h.backend.handler
    for (const path of ['/me', '/auth/session']) {
      h.backend.handler = ordinary
      h.backend.requests.length = 0
      const cookie = await signedIn()
      const user = () => h.backend.requests.filter((r) => r.target === '/user')
      // Within the interval: the local verification alone, nothing asked.
      assert.equal((await withCookie(cookie, 'GET', path)).statusCode, 200)
      assert.equal(user().length, 0)
      h.backend.handler = (_req, res) =>
        res.writeHead(403, { 'content-type': 'application/json' }).end(SESSION_NOT_FOUND)
      const res = await later(61_000, () => withCookie(cookie, 'GET', path))
      assert.equal(res.statusCode, 401, res.body)
      assert.match(cookieOf(res), /Max-Age=0/)
      assert.equal(user().length, 1)
      assert.match(String(user()[0]!.headers.authorization), /^Bearer ey/)
      h.backend.requests.length = 0
      h.backend.handler = () => assert.fail('nothing more is asked of Supabase Auth')
      assert.equal((await withCookie(cookie, 'GET', path)).statusCode, 401)
    }
  })

  it('a sign-in posted from another site is refused (login CSRF)', async () => {
    const res = await signIn({ 'x-authgate-session': 'cookie', origin: 'https://evil.example.com' })
    assert.equal(res.statusCode, 403)
    assert.equal(h.backend.requests.length, 0)
    const allowed = await signIn({ 'x-authgate-session': 'cookie', origin: 'https://app.example.com' })
    assert.equal(allowed.statusCode, 200)
  })

  it("the application's protected routes take the cookie, and see the bearer header", async () => {
    const cookie = await signedIn()
    const me = await withCookie(cookie, 'GET', '/me')
    assert.equal(me.statusCode, 200, me.body)
    assert.deepEqual(me.json(), { email: `user${issued}@example.com`, header: 'Bearer ' })
    const post = await withCookie(cookie, 'POST', '/notes', { origin: OWN })
    assert.equal(post.statusCode, 200)
    const none = await h.app.inject({ method: 'GET', url: '/me' })
    assert.equal(none.statusCode, 401)
  })

  it('a stand-in bearer with its cookie stands for the real token on bearer routes and protected routes', async () => {
    const res = await signIn()
    const cookie = cookieOf(res)
    const { access_token: standIn } = res.json() as { access_token: string }
    const stored = await h.app.authgate.sessions!.sessions.load(cookie.split(';')[0]!.split('=')[1]!)
    const bearer = { authorization: `Bearer ${standIn}` }
    const user = await withCookie(cookie, 'GET', '/auth/user', bearer)
    assert.equal(user.json().authorization, `Bearer ${stored!.session.accessToken}`)
    const me = await withCookie(cookie, 'GET', '/me', bearer)
    assert.equal(me.statusCode, 200, me.body)
    assert.match(String(me.json().email), /^user\d+@example\.com$/)
    // Without the cookie, with another session's cookie, from a foreign origin, forged, expired: refused, nothing forwarded.
    const before = h.backend.requests.length
    const bare = await h.app.inject({ method: 'GET', url: '/auth/user', headers: { host: HOST, ...bearer } })
    assert.equal(bare.statusCode, 401)
    assert.equal(bare.json().error_code, 'session_not_found')
    const otherCookie = await signedIn()
    const crossed = await withCookie(otherCookie, 'GET', '/auth/user', bearer)
    assert.equal(crossed.json().error_code, 'session_not_found')
    const foreign = await withCookie(cookie, 'GET', '/auth/user', { ...bearer, origin: 'https://evil.example' })
    assert.equal(foreign.json().error_code, 'cross_site_request')
    const sibling = await withCookie(cookie, 'GET', '/me', { ...bearer, 'sec-fetch-site': 'same-site' })
    assert.equal(sibling.statusCode, 403)
    const [head, payload, mac] = standIn.split('.')
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>
    const widened = `${head}.${Buffer.from(JSON.stringify({ ...claims, role: 'service_role' })).toString('base64url')}.${mac}`
    const forged = await withCookie(cookie, 'GET', '/auth/user', { authorization: `Bearer ${widened}` })
    assert.equal(forged.json().error_code, 'bad_jwt')
    const expired = await later(3 * 3600_000, () => withCookie(cookie, 'GET', '/auth/user', bearer))
    assert.equal(expired.statusCode, 401)
    // Forwarded meanwhile: the other session's sign-in and, three hours on, authgate's own refresh.
    const forwarded = h.backend.requests.slice(before).map((r) => r.target)
    assert.deepEqual(forwarded, ['/token?grant_type=password', '/token?grant_type=refresh_token'])
  })

  it('a stand-in made under a key taken out of AUTHGATE_SESSION_KEYS: 401 bad_jwt, nothing forwarded', async () => {
    const res = await signIn()
    const cookie = cookieOf(res)
    const active = await h.app.authgate.sessions!.sessions.load(cookie.split(';')[0]!.split('=')[1]!)
    // What the page still holds after `ka` was removed: a stand-in of this very session, made under `ka`.
    const removed = new StandIns([{ id: 'ka', key: randomBytes(32) }])
    const stale = removed.access(active!.handle, active!.session.accessToken, active!.session.expiresAt)
    const bearer = { authorization: `Bearer ${stale}` }
    const before = h.backend.requests.length
    for (const [path, headers] of [
      ['/auth/user', bearer],
      ['/me', bearer],
      ['/auth/reauthenticate', bearer],
    ] as const) {
      for (const withCookie_ of [true, false]) {
        const answer = withCookie_
          ? await withCookie(cookie, 'GET', path, headers)
          : await h.app.inject({ method: 'GET', url: path, headers: { host: HOST, ...headers } })
        assert.equal(answer.statusCode, 401, `${path} ${answer.body}`)
        assert.equal(answer.json().error_code, 'bad_jwt', path)
        assert.match(answer.json().msg, /key authgate no longer holds/, path)
      }
    }
    assert.equal(h.backend.requests.length, before, 'nothing forwarded')
    // The session itself still works with the cookie alone, or a stand-in of a listed key.
    const user = await withCookie(cookie, 'GET', '/auth/user')
    assert.equal(user.json().authorization, `Bearer ${active!.session.accessToken}`)
  })

  it('the refresh stand-in: authgate refreshes with the real refresh token and answers new stand-ins', async () => {
    const res = await signIn()
    const cookie = cookieOf(res)
    const first = res.json() as { access_token: string; refresh_token: string }
    const id = cookie.split(';')[0]!.split('=')[1]!
    const before = await h.app.authgate.sessions!.sessions.load(id)
    const refresh = (headers: Record<string, string>, token = first.refresh_token) =>
      h.app.inject({
        method: 'POST',
        url: '/auth/token?grant_type=refresh_token',
        headers: { 'content-type': 'application/json', host: HOST, ...headers },
        payload: JSON.stringify({ refresh_token: token }),
      })
    const answered = await refresh({ cookie: cookie.split(';')[0]!, origin: OWN })
    assert.equal(answered.statusCode, 200, answered.body)
    const sent = h.backend.requests.at(-1)!
    assert.equal(sent.target, '/token?grant_type=refresh_token')
    assert.equal(JSON.parse(sent.body.toString()).refresh_token, before!.session.refreshToken)
    const next = answered.json() as { access_token: string; refresh_token: string; expires_at: number; user: unknown }
    const after = await h.app.authgate.sessions!.sessions.load(id)
    assert.notEqual(after!.session.refreshToken, before!.session.refreshToken)
    assert.notEqual(next.access_token, first.access_token)
    assert.equal(
      next.refresh_token,
      first.refresh_token,
      'the refresh stand-in is the session’s, whatever the real one',
    )
    assert.equal(next.expires_at, after!.session.expiresAt)
    assert.ok(
      !answered.body.includes(after!.session.accessToken) && !answered.body.includes(after!.session.refreshToken),
    )
    assert.equal(answered.headers['set-cookie'], undefined, 'the same cookie')
    // Without the cookie or from elsewhere: refused, nothing forwarded.
    const count = h.backend.requests.length
    const bare = await refresh({})
    assert.equal(bare.statusCode, 400)
    assert.equal(bare.json().error_code, 'refresh_token_not_found')
    const foreign = await refresh({ cookie: cookie.split(';')[0]!, origin: 'https://evil.example' })
    assert.equal(foreign.json().error_code, 'cross_site_request')
    const otherSession = await refresh({ cookie: (await signedIn()).split(';')[0]!, origin: OWN })
    assert.equal(otherSession.json().error_code, 'refresh_token_not_found')
    assert.equal(h.backend.requests.length - count, 1, 'only the other sign-in')
  })

  it('MFA verify with the cookie: a new session id, the old one ends', async () => {
    const cookie = await signedIn()
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/factors/0b8a2e1c-4b7a-4f0e-9d53-6f1c2a3b4c5d/verify',
      headers: { host: HOST, cookie: cookie.split(';')[0]!, origin: OWN, 'content-type': 'application/json' },
      payload: '{"challenge_id":"1b8a2e1c-4b7a-4f0e-9d53-6f1c2a3b4c5d","code":"123456"}',
    })
    assert.equal(res.statusCode, 200, res.body)
    assert.ok(h.app.authgate.sessions!.sessions.standIns.isAccess(String(res.json().access_token)))
    // Supabase Auth was asked with the bearer of the old session.
    assert.match(String(h.backend.requests.at(-1)!.headers.authorization), /^Bearer ey/)
    const next = cookieOf(res)
    assert.notEqual(next.split(';')[0], cookie.split(';')[0])
    assert.equal((await withCookie(cookie, 'GET', '/auth/session')).statusCode, 401)
    assert.equal((await withCookie(next, 'GET', '/auth/session')).statusCode, 200)
  })

  it('sign-out: revoked at Supabase Auth with the bearer, forgotten here, cookie cleared', async () => {
    const cookie = await signedIn()
    const kept = await withCookie(cookie, 'POST', '/auth/logout?scope=others', { origin: OWN })
    assert.equal(kept.statusCode, 204)
    assert.equal(kept.headers['set-cookie'], undefined)
    const res = await withCookie(cookie, 'POST', '/auth/logout', { origin: OWN })
    assert.equal(res.statusCode, 204)
    assert.match(cookieOf(res), /^__Host-authgate-session=; .*Max-Age=0/)
    const sent = h.backend.requests.filter((r) => r.target.startsWith('/logout'))
    assert.match(String(sent.at(-1)!.headers.authorization), /^Bearer ey/)
    assert.equal((await withCookie(cookie, 'GET', '/auth/session')).statusCode, 401)
  })

  it('a repeated scope is read as Supabase Auth reads it: the first value', async () => {
    const cookie = await signedIn()
    const kept = await withCookie(cookie, 'POST', '/auth/logout?scope=others&scope=global', { origin: OWN })
    assert.equal(kept.statusCode, 204)
    assert.equal(kept.headers['set-cookie'], undefined)
    assert.equal((await withCookie(cookie, 'GET', '/auth/session')).statusCode, 200)
    const ended = await withCookie(cookie, 'POST', '/auth/logout?scope=global&scope=others', { origin: OWN })
    assert.match(cookieOf(ended), /Max-Age=0/)
  })

  it('a sign-out Supabase Auth no longer knows also ends it here; a failing one does not', async () => {
    const cookie = await signedIn()
    h.backend.handler = (_req, res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{}')
    const failed = await withCookie(cookie, 'POST', '/auth/logout', { origin: OWN })
    assert.equal(failed.statusCode, 500)
    assert.equal((await withCookie(cookie, 'GET', '/auth/session')).statusCode, 200)
    h.backend.handler = (_req, res) =>
      res.writeHead(403, { 'content-type': 'application/json' }).end('{"code":403,"error_code":"session_not_found"}')
    const gone = await withCookie(cookie, 'POST', '/auth/logout', { origin: OWN })
    assert.equal(gone.statusCode, 403)
    assert.match(cookieOf(gone), /Max-Age=0/)
  })

  it('a store that cannot save the session: 503 in our shape, no cookie', async () => {
    const set = store.set
    store.set = async () => {
      throw new Error('down')
    }
    try {
      const res = await signIn()
      assert.equal(res.statusCode, 503)
      assert.equal(res.json().error_code, 'session_store_unavailable')
      assert.equal(res.headers['set-cookie'], undefined)
    } finally {
      store.set = set
    }
    const get = store.get
    store.get = async () => {
      throw new Error('down')
    }
    try {
      const res = await withCookie(`__Host-authgate-session=${'c'.repeat(43)}`, 'GET', '/me')
      assert.equal(res.statusCode, 503)
      const session = await withCookie(`__Host-authgate-session=${'c'.repeat(43)}`, 'GET', '/auth/session')
      assert.equal(session.statusCode, 503)
      assert.equal(session.json().error_code, 'session_store_unavailable')
    } finally {
      store.get = get
    }
  })

  it('in request mode an e-mail link (no header) redirects with its tokens as before', async () => {
    h.backend.handler = (_req, res) => {
      res.writeHead(303, {
        location: 'https://app.example.com/#access_token=a&refresh_token=r',
        'content-type': 'text/html',
      })
      res.end('x')
    }
    const res = await h.app.inject({ method: 'GET', url: '/auth/verify?token=t&type=magiclink' })
    assert.equal(res.statusCode, 303)
    assert.match(String(res.headers.location), /access_token=a/)
  })

  it('an answer too large to hold is a 502, not relayed', async () => {
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(Buffer.alloc(2 * 1024 * 1024, 32))
    }
    const res = await signIn()
    assert.equal(res.statusCode, 502)
    assert.equal(res.json().error_code, 'backend_unreachable')
  })

  it('the document: GET /session, and session routes say cookie mode drops the tokens', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { description?: string; responses: Record<string, unknown> }>>
    }
    assert.ok(doc.paths['/auth/session']?.get)
    assert.ok(doc.paths['/auth/session']!.get!.responses['401'])
    const token = doc.paths['/auth/token']!.post!
    assert.match(String(token.description), /stand-ins for `access_token` and `refresh_token`/)
    assert.match(JSON.stringify(token.responses['200']), /CookieSessionResponse/)
    assert.match(JSON.stringify(token.responses['403']), /cross_site_request/)
    assert.ok(doc.paths['/notes']!.post!.responses['403'])
    for (const status of ['502', '503', '504']) assert.ok(doc.paths['/me']!.get!.responses[status], status)
  })
})

describe('cookie sessions in `on` mode', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend({}, { sessions: { keys: [KEY] } })
  })
  after(() => h.close())
  beforeEach(() => {
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"access_token":"a","refresh_token":"r","expires_in":60,"user":{"id":"u"}}')
    }
  })

  it('an e-mail link: the cookie; Location with stand-ins, the body without the tokens', async () => {
    const location = 'https://app.example.com/welcome#access_token=a&expires_in=60&refresh_token=r&type=magiclink'
    const escaped = location.replaceAll('&', '&amp;')
    h.backend.handler = (req, res) => {
      if (req.url === '/user') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return void res.end('{"id":"u","email":"link@example.com"}')
      }
      res.writeHead(303, { location, 'content-type': 'text/html; charset=utf-8' })
      res.end(`<a href="${escaped}">See Other</a>.\n\n`)
    }
    const res = await h.app.inject({ method: 'GET', url: '/auth/verify?token=t&type=magiclink' })
    assert.equal(res.statusCode, 303)
    const cookie = cookieOf(res).split(';')[0]!
    const handle = sessionHandle(cookie.split('=')[1]!)
    const standIns = h.app.authgate.sessions!.sessions.standIns
    const relayed = new URL(String(res.headers.location))
    assert.equal(relayed.origin + relayed.pathname, 'https://app.example.com/welcome')
    const fragment = new URLSearchParams(relayed.hash.slice(1))
    assert.deepEqual([...fragment.keys()], ['expires_in', 'type', 'access_token', 'refresh_token'])
    assert.equal(fragment.get('type'), 'magiclink')
    assert.equal(standIns.checkAccess(fragment.get('access_token')!, handle, 0), undefined)
    assert.equal(standIns.checkRefresh(fragment.get('refresh_token')!, handle), true)
    assert.equal(res.body, `<a href="${String(res.headers.location).replaceAll('&', '&amp;')}">See Other</a>.\n\n`)
    const session = await h.app.inject({ method: 'GET', url: '/auth/session', headers: { cookie } })
    assert.equal(session.json().user.email, 'link@example.com')
    // A user Supabase Auth does not answer: the session is kept, without a user.
    h.backend.handler = (req, res) => {
      if (req.url === '/user') return void res.writeHead(500).end()
      res.writeHead(303, { location }).end('<a href="elsewhere?access_token=a">x</a>')
    }
    const second = await h.app.inject({ method: 'GET', url: '/auth/verify?token=t&type=magiclink' })
    assert.equal(second.body, '')
    const bare = await h.app.inject({
      method: 'GET',
      url: '/auth/session',
      headers: { cookie: cookieOf(second).split(';')[0]! },
    })
    assert.equal(bare.json().user, null)
    // A redirect without a session (PKCE, an error) is relayed as it is.
    h.backend.handler = (_req, res) => res.writeHead(303, { location: 'https://app.example.com/?code=c' }).end()
    const pkce = await h.app.inject({ method: 'GET', url: '/auth/verify?token=t&type=magiclink' })
    assert.equal(pkce.headers.location, 'https://app.example.com/?code=c')
    assert.equal(pkce.headers['set-cookie'], undefined)
  })

  it('every session answer becomes the cookie, no header needed', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/token?grant_type=password',
      headers: { 'content-type': 'application/json' },
      payload: '{"email":"a@example.com","password":"secret123"}',
    })
    const { access_token, refresh_token, expires_at, ...rest } = res.json() as Record<string, unknown>
    assert.deepEqual(rest, { expires_in: 60, token_type: 'bearer', user: { id: 'u' } })
    assert.equal(typeof expires_at, 'number')
    assert.notEqual(access_token, 'a')
    assert.notEqual(refresh_token, 'r')
    assert.match(cookieOf(res), /^__Host-authgate-session=/)
  })

  it('without cookie sessions the document has no /session', async () => {
    const plain = await withFakeBackend()
    try {
      const doc = (await plain.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: object }
      assert.equal('/auth/session' in doc.paths, false)
    } finally {
      await plain.close()
    }
  })
})

describe('cookie sessions with AUTHGATE_SESSION_OAUTH_CONSENT set (a consent page apart from the application)', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend({}, { sessions: { keys: [KEY], oauthConsentMs: 300_000 } })
  })
  after(() => h.close())

  it('a session signed in within the window consents; an older one only on a same-origin top-level navigation', async () => {
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"access_token":"a","refresh_token":"r","expires_in":3600,"user":{"id":"u"}}')
    }
    const signIn = await h.app.inject({
      method: 'POST',
      url: '/auth/token?grant_type=password',
      headers: { 'content-type': 'application/json', host: HOST },
      payload: '{"email":"a@example.com","password":"secret123"}',
    })
    const cookie = cookieOf(signIn).split(';')[0]!
    h.backend.handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ authorization: req.headers.authorization ?? null }))
    }
    const details = (headers: Record<string, string>) =>
      h.app.inject({
        method: 'GET',
        url: `/auth/oauth/authorizations/${AUTHORIZATION}`,
        headers: { host: HOST, cookie, ...headers },
      })
    const consent = () =>
      h.app.inject({
        method: 'POST',
        url: `/auth/oauth/authorizations/${AUTHORIZATION}/consent`,
        headers: { host: HOST, cookie, origin: OWN, 'content-type': 'application/json' },
        payload: '{"action":"approve"}',
      })
    const fetched = { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' }
    assert.equal((await details(fetched)).json().authorization, 'Bearer a')
    assert.equal((await consent()).statusCode, 200)
    await later(301_000, async () => {
      const old = await details(fetched)
      assert.equal(old.statusCode, 403)
      assert.equal(old.json().error_code, 'session_cookie_refused')
      assert.equal((await consent()).statusCode, 403)
      assert.equal((await details(NAVIGATION)).statusCode, 200)
      // Into a frame, its parent page could read the answer.
      assert.equal((await details({ ...NAVIGATION, 'sec-fetch-dest': 'iframe' })).statusCode, 403)
    })
    // Still the cross-site check first.
    assert.equal((await details({ 'sec-fetch-site': 'cross-site' })).json().error_code, 'cross_site_request')
  })

  it('on mode: identity linking with the cookie only with PKCE, whose code then becomes a cookie', async () => {
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"access_token":"a","refresh_token":"r","expires_in":3600,"user":{"id":"u"}}')
    }
    const signIn = await h.app.inject({
      method: 'POST',
      url: '/auth/token?grant_type=password',
      headers: { 'content-type': 'application/json', host: HOST },
      payload: '{"email":"a@example.com","password":"secret123"}',
    })
    const cookie = cookieOf(signIn).split(';')[0]!
    h.backend.handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ authorization: req.headers.authorization ?? null }))
    }
    h.backend.requests.length = 0
    const link = (query: string) =>
      h.app.inject({
        method: 'GET',
        url: `/auth/user/identities/authorize?provider=github${query}`,
        headers: { host: HOST, cookie, 'sec-fetch-site': 'same-origin' },
      })
    // Supabase Auth reads the query with Go's ParseQuery and takes the first value: an empty first
    // one is no PKCE, nor is a pair Go drops (a `;` in it, a bad escape), nor another name.
    for (const query of [
      '',
      '&code_challenge=',
      '&code_challenge=&code_challenge=abc&code_challenge_method=s256',
      '&code_challenge=abc;',
      '&code_challenge=abc;&code_challenge_method=s256',
      '&code_challenge=%zz',
      '&code_challenge=abc%',
      '&code_challenge;=abc',
      '&code_challenge%3Dabc',
      '&code_challenge%3D=abc',
      '&code_challenge=abc;&code_challenge=',
      '&code%ZZchallenge=abc',
    ]) {
      const refused = await link(query)
      assert.equal(refused.statusCode, 403, query)
      assert.equal(refused.json().error_code, 'session_cookie_refused', query)
      assert.match(refused.json().msg, /needs PKCE/)
    }
    assert.equal(h.backend.requests.length, 0)
    // What Go does read as a challenge: an encoded name, the first of several, one after a dropped pair.
    for (const query of [
      '&code_challenge=abc&code_challenge_method=s256',
      '&code%5Fchallenge=abc&code_challenge_method=s256',
      '&code_challenge=abc&code_challenge=',
      '&code_challenge=%zz&code_challenge=abc',
      '&code_challenge=x;&code_challenge=abc',
    ]) {
      const pkce = await link(query)
      assert.equal(pkce.statusCode, 200, query)
      assert.equal(pkce.json().authorization, 'Bearer a', query)
    }
  })

  it('the document names the refusal on the consent routes', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>
    }
    const consent = doc.paths['/auth/oauth/authorizations/{authorization_id}/consent']!.post!
    assert.match(JSON.stringify(consent.responses['403']), /session_cookie_refused/)
    const link = doc.paths['/auth/user/identities/authorize']!.get!
    assert.match(JSON.stringify(link.responses['403']), /session_cookie_refused/)
    assert.doesNotMatch(JSON.stringify(doc.paths['/auth/user']!.get!.responses['403']), /session_cookie_refused/)
  })
})
