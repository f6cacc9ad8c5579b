import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { after, before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { withFakeBackend, type Harness } from '../support/app.ts'

const HOST = 'api.example.com'
const OWN = `http://${HOST}`
const AUTHORIZATION = 'ppb3djtqzpsdmxbi7lhkgusc4cpj35ur'
const PAGE = '/oauth/consent'
const KEY = { id: 'k1', key: randomBytes(32) }
const CROSS_SITE_NAVIGATION = {
  'sec-fetch-mode': 'navigate',
  'sec-fetch-site': 'cross-site',
  'sec-fetch-dest': 'document',
}
const FORM_NAVIGATION = { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'same-origin', 'sec-fetch-dest': 'document' }

/** Supabase Auth's side: a password sign-in, the authorization's details for token `a`, its consent. */
function backend(decisions: string[], clientName = 'Todo <client>') {
  return (req: IncomingMessage, res: ServerResponse, raw: Buffer) => {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    const body = raw.toString('utf8')
    {
      const url = req.url ?? ''
      if (url.startsWith('/.well-known/oauth-authorization-server'))
        return json(200, { issuer: 'http://localhost/auth' })
      if (url.startsWith('/oauth/authorize?')) {
        res.writeHead(302, { location: `http://localhost${PAGE}?authorization_id=${AUTHORIZATION}` })
        return res.end()
      }
      if (url === '/token?grant_type=password') {
        const { password } = JSON.parse(body) as { password: string }
        if (password !== 'right-password') return json(400, { code: 400, error_code: 'invalid_credentials', msg: 'no' })
        return json(200, { access_token: 'a', refresh_token: 'r', expires_in: 3600, user: { id: 'u' } })
      }
      if (req.headers.authorization !== 'Bearer a') return json(403, { code: 403, error_code: 'bad_jwt', msg: 'bad' })
      if (url === `/oauth/authorizations/${AUTHORIZATION}`)
        return json(200, {
          authorization_id: AUTHORIZATION,
          redirect_uri: 'http://localhost:3000/cb',
          client: { id: '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60', name: clientName },
          user: { id: 'u', email: 'ada@example.com' },
          scope: 'openid email',
        })
      if (url === `/oauth/authorizations/${AUTHORIZATION}/consent`) {
        const { action } = JSON.parse(body) as { action: string }
        decisions.push(action)
        const tail = action === 'approve' ? 'code=c1' : 'error=access_denied'
        return json(200, { redirect_url: `http://localhost:3000/cb?${tail}&state=s` })
      }
      return json(404, { code: 404, error_code: 'not_found', msg: url })
    }
  }
}

const hiddenFields = (html: string) =>
  Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]]),
  )

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()

/** The ticket authgate adds to Supabase Auth's redirect from /oauth/authorize to the page. */
async function ticketOf(h: Harness): Promise<string> {
  const query = new URLSearchParams({
    client_id: '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60',
    redirect_uri: 'http://localhost:3000/cb',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  })
  const res = await h.app.inject({ method: 'GET', url: `/auth/oauth/authorize?${query}`, headers: { host: HOST } })
  assert.equal(res.statusCode, 302)
  const location = new URL(String(res.headers.location))
  assert.equal(location.searchParams.get('authorization_id'), AUTHORIZATION)
  return location.searchParams.get('ticket')!
}

describe("authgate's consent page", () => {
  let h: Harness
  const decisions: string[] = []
  let cookie = ''
  before(async () => {
    h = await withFakeBackend(
      {},
      {
        sessions: { keys: [KEY], oauthConsentMs: 300_000, secure: false, cookieName: 'sess' },
        consentPage: { path: PAGE },
      },
    )
    h.backend.handler = backend(decisions)
    const signIn = await h.app.inject({
      method: 'POST',
      url: '/auth/token?grant_type=password',
      headers: { 'content-type': 'application/json', host: HOST, 'x-authgate-session': 'cookie' },
      payload: '{"email":"ada@example.com","password":"right-password"}',
    })
    const header = signIn.headers['set-cookie']
    cookie = String(Array.isArray(header) ? header[0] : header).split(';')[0]!
    assert.match(cookie, /^sess=/)
  })
  after(() => h.close())

  const page = (headers: Record<string, string>, query = '') =>
    h.app.inject({
      method: 'GET',
      url: `${PAGE}?authorization_id=${AUTHORIZATION}${query}`,
      headers: { host: HOST, ...headers },
    })
  const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    h.app.inject({
      method: 'POST',
      url: PAGE,
      headers: {
        host: HOST,
        origin: OWN,
        'content-type': 'application/x-www-form-urlencoded',
        ...FORM_NAVIGATION,
        ...headers,
      },
      payload: form(fields),
    })
  const securityHeaders = (res: LightMyRequestResponse) => {
    assert.match(String(res.headers['content-security-policy']), /default-src 'none'.*frame-ancestors 'none'/)
    assert.equal(res.headers['x-frame-options'], 'DENY')
    assert.equal(res.headers['cache-control'], 'no-store')
    // Not `no-referrer`: under it a browser posts the page's form with `Origin: null`.
    assert.equal(res.headers['referrer-policy'], 'same-origin')
    assert.match(res.body, /<meta name="referrer" content="same-origin">/)
  }

  it('the session cookie, on the navigation from /oauth/authorize: the client, the redirect host, the scopes, escaped', async () => {
    const res = await page({ cookie, ...CROSS_SITE_NAVIGATION })
    assert.equal(res.statusCode, 200)
    securityHeaders(res)
    assert.match(String(res.headers['content-security-policy']), /form-action 'self' http:\/\/localhost:3000/)
    assert.match(res.body, /Todo &lt;client&gt;/)
    assert.doesNotMatch(res.body, /<client>/)
    assert.match(res.body, /<strong>localhost:3000<\/strong>/)
    assert.match(res.body, /<code>openid<\/code>.*<code>email<\/code>/s)
    assert.match(res.body, /ada@example\.com/)
    const fields = hiddenFields(res.body)
    assert.ok(fields.csrf, 'a cookie decision carries a CSRF token')
    assert.equal(fields.access_token, undefined, 'the cookie session’s token is never written into the page')
  })

  it('a cookie decision needs the CSRF token of its session and authorization, and the page’s origin', async () => {
    const fields = hiddenFields((await page({ cookie, ...CROSS_SITE_NAVIGATION })).body)
    const forged = await post({ authorization_id: AUTHORIZATION, decision: 'approve', csrf: 'x' }, { cookie })
    assert.equal(forged.statusCode, 403)
    const elsewhere = await post({ ...fields, decision: 'approve' }, { cookie, origin: 'https://evil.example' })
    assert.equal(elsewhere.statusCode, 403)
    const crossSite = await post({ ...fields, decision: 'approve' }, { cookie, 'sec-fetch-site': 'cross-site' })
    assert.equal(crossSite.statusCode, 403)
    assert.deepEqual(decisions, [], 'nothing reached Supabase Auth')
    const approved = await post({ ...fields, decision: 'approve' }, { cookie })
    assert.equal(approved.statusCode, 303)
    assert.equal(
      approved.headers.location,
      'http://localhost:3000/cb?code=c1&state=s&iss=http%3A%2F%2Flocalhost%2Fauth',
    )
    assert.deepEqual(decisions, ['approve'])
  })

  it('a bearer token identifies the user too; deny goes back with access_denied', async () => {
    const res = await page({ authorization: 'Bearer a' })
    assert.equal(res.statusCode, 200)
    const denied = await post({ ...hiddenFields(res.body), decision: 'deny' }, { authorization: 'Bearer a' })
    assert.equal(denied.statusCode, 303)
    assert.match(String(denied.headers.location), /error=access_denied&state=s&iss=/)
  })

  it('no credential: the sign-in form; a wrong password says so; the right one shows the consent', async () => {
    const ticket = await ticketOf(h)
    const res = await page({}, `&ticket=${encodeURIComponent(ticket)}`)
    assert.equal(res.statusCode, 200)
    securityHeaders(res)
    assert.match(res.body, /name="password"/)
    assert.equal(hiddenFields(res.body).ticket, ticket, 'the form carries the ticket of the link')
    const wrong = await post({
      authorization_id: AUTHORIZATION,
      ticket,
      decision: 'sign_in',
      email: 'ada@example.com',
      password: 'x',
    })
    assert.equal(wrong.statusCode, 400)
    assert.match(wrong.body, /not right/)
    const right = await post({
      authorization_id: AUTHORIZATION,
      ticket,
      decision: 'sign_in',
      email: 'ada@example.com',
      password: 'right-password',
    })
    assert.equal(right.statusCode, 200)
    assert.equal(hiddenFields(right.body).access_token, 'a')
  })

  it('a sign-in without the ticket of an authorization Supabase Auth opened is a wrong password, and asks nothing', async () => {
    const ticket = await ticketOf(h)
    const asked = h.backend.requests.length
    const signIn = (fields: Record<string, string>) =>
      post({ authorization_id: AUTHORIZATION, decision: 'sign_in', email: 'ada@example.com', ...fields })
    const wrong = await signIn({ ticket, password: 'x' })
    const afterWrong = h.backend.requests.length
    assert.equal(afterWrong, asked + 1, 'the wrong password was checked by Supabase Auth')
    const tries: Array<Record<string, string>> = [
      { password: 'right-password' },
      { ticket: '', password: 'right-password' },
      { ticket: ticket.replace(/\.(.)/, (_, c: string) => `.${c === 'A' ? 'B' : 'A'}`), password: 'right-password' },
      { ticket: `1.${ticket.split('.')[1]}`, password: 'right-password' },
    ]
    for (const fields of tries) {
      const refused = await signIn(fields)
      assert.equal(refused.statusCode, wrong.statusCode)
      assert.equal(
        refused.body.replace(/name="ticket" value="[^"]*"/, ''),
        wrong.body.replace(/name="ticket" value="[^"]*"/, ''),
        'the same answer as a wrong password',
      )
    }
    assert.equal(h.backend.requests.length, afterWrong, 'no password was sent for an authorization without a ticket')
  })

  it('refuses a malformed authorization id, an unknown decision, and a POST without Origin', async () => {
    assert.equal(
      (await h.app.inject({ method: 'GET', url: `${PAGE}?authorization_id=a%2Fb`, headers: { host: HOST } }))
        .statusCode,
      400,
    )
    assert.equal(
      (await post({ authorization_id: AUTHORIZATION, decision: 'maybe' }, { authorization: 'Bearer a' })).statusCode,
      400,
    )
    const noOrigin = await h.app.inject({
      method: 'POST',
      url: PAGE,
      headers: { host: HOST, 'content-type': 'application/x-www-form-urlencoded', authorization: 'Bearer a' },
      payload: form({ authorization_id: AUTHORIZATION, decision: 'approve' }),
    })
    assert.equal(noOrigin.statusCode, 403)
  })
})

describe('the consent page without AUTHGATE_SESSION_OAUTH_CONSENT', () => {
  it('does not take the session cookie: the user signs in on the page instead', async () => {
    const h = await withFakeBackend(
      {},
      { sessions: { keys: [KEY], secure: false, cookieName: 'sess' }, consentPage: { path: PAGE } },
    )
    try {
      h.backend.handler = backend([])
      const signIn = await h.app.inject({
        method: 'POST',
        url: '/auth/token?grant_type=password',
        headers: { 'content-type': 'application/json', host: HOST, 'x-authgate-session': 'cookie' },
        payload: '{"email":"ada@example.com","password":"right-password"}',
      })
      const cookie = String(signIn.headers['set-cookie']).split(';')[0]!
      const res = await h.app.inject({
        method: 'GET',
        url: `${PAGE}?authorization_id=${AUTHORIZATION}`,
        headers: { host: HOST, cookie, ...CROSS_SITE_NAVIGATION },
      })
      assert.equal(res.statusCode, 200)
      assert.match(res.body, /name="password"/)
    } finally {
      await h.close()
    }
  })
})
