import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { OAUTH_CONSENT_PATH } from '../scripts/supabase-auth/env.ts'
import { loggedRequests } from './support/backend-requests.ts'
import { chromiumUnavailableReason, launchChromium } from './support/chromium.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = (await backendUnavailableReason()) ?? (await chromiumUnavailableReason())

const PASSWORD = 'correct-horse-battery-6'
/** The account the guesses are about, and one whose bucket nobody spent. */
const GUESSED = 'consent-victim@example.com'
const OTHER = 'consent-other@example.com'
const REDIRECT_URI = 'http://localhost:3000/consent-sign-in/callback'

/**
 * The consent page's password sign-in against the real Supabase Auth, in Chromium, with this
 * test's loopback connection as the trusted proxy that names each client (X-Forwarded-For): it is
 * held to `POST /token`'s per-account limit (5 failures here), and it asks Supabase Auth for no
 * password unless the authorization is one Supabase Auth opened.
 */
describe('the consent page signs in as POST /token does', { skip: unavailable }, () => {
  let stack: Stack
  let browser: Browser
  let context: BrowserContext
  let clientId = ''

  before(async () => {
    stack = await startStack({
      database: 'authgate_e2e_consent_sign_in',
      trustedProxies: ['127.0.0.1/32'],
      extraEnv: { GOTRUE_LOG_LEVEL: 'info' },
      rateLimit: {
        // The per-client limit out of the way of what is shown: the per-account one, 5 failures.
        routeRates: { 'POST /token': '1000/5m' },
        accountRouteRates: { 'POST /token': '5/15m' },
        accountKeySecret: randomBytes(32).toString('base64url'),
        deviceCookie: true,
      },
      consentPage: { path: OAUTH_CONSENT_PATH },
    })
    for (const email of [GUESSED, OTHER]) {
      const created = await fetch(`${stack.backend.url}/admin/users`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.backend.serviceRoleJwt()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD, email_confirm: true }),
      })
      assert.equal(created.status, 200, await created.text())
    }
    const registered = await fetch(`${stack.url}/auth/oauth/clients/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Consent sign-in test',
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: 'none',
      }),
    })
    const client = await registered.text()
    assert.equal(registered.status, 201, client)
    clientId = (JSON.parse(client) as { client_id: string }).client_id
    browser = await launchChromium()
    context = await browser.newContext()
  })
  after(async () => {
    await browser?.close()
    await stack?.stop()
  })

  const passwordGrants = () => loggedRequests(stack.backend.logs()).filter((r) => r.path === '/token').length

  /** The browser sent by /oauth/authorize to the page, as an MCP client sends it. */
  async function openAuthorization(page: Page): Promise<void> {
    const verifier = randomBytes(32).toString('base64url')
    const url = new URL(`${stack.publicUrl}/oauth/authorize`)
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid email',
      state: 'st',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString()
    await page.goto(url.href)
    assert.equal(new URL(page.url()).pathname, OAUTH_CONSENT_PATH)
  }

  /** Sends the sign-in form from `clientIp` (named by the trusted proxy); the page's status and its alert. */
  async function signIn(page: Page, email: string, password: string, clientIp: string) {
    await page.setExtraHTTPHeaders({ 'x-forwarded-for': clientIp })
    await page.fill('#email', email)
    await page.fill('#password', password)
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('button[type=submit]'),
    ])
    await page.waitForLoadState()
    const alert = (await page.locator('[role=alert]').count()) > 0 ? await page.textContent('[role=alert]') : ''
    return { status: answer.status(), alert: alert ?? '', body: await answer.text() }
  }

  it('12 guesses from 12 addresses: Supabase Auth checks 5, the rest and the right password are refused', async (t) => {
    const page = await context.newPage()
    try {
      await openAuthorization(page)
      const grantsBefore = passwordGrants()
      const statuses: number[] = []
      for (let i = 0; i < 12; i++)
        statuses.push((await signIn(page, GUESSED, `guess-${i}-wrong`, `198.51.100.${i + 1}`)).status)
      const right = await signIn(page, GUESSED, PASSWORD, '198.51.100.13')
      const tally = (list: number[]) => {
        const counts = new Map<number, number>()
        for (const status of list) counts.set(status, (counts.get(status) ?? 0) + 1)
        return [...counts].map(([status, n]) => `${status}×${n}`).join(' ')
      }
      t.diagnostic(`the page from 12 IPs: ${tally(statuses)}; then the right password from a 13th: ${right.status}`)
      assert.deepEqual(statuses, [...Array<number>(5).fill(400), ...Array<number>(7).fill(429)])
      assert.equal(right.status, 429, 'the right password waits too: the account is held')
      assert.match(right.alert, /Too many attempts/)
      // The reservations are settled when Supabase Auth answers: each of the 5 reached it.
      assert.equal(passwordGrants() - grantsBefore, 5, 'Supabase Auth saw 5 password grants for a limit of 5')

      // One bucket with POST /token: the page's guesses spent it for the API too.
      const api = await fetch(`${stack.url}/auth/token?grant_type=password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.14' },
        body: JSON.stringify({ email: GUESSED, password: PASSWORD }),
      })
      assert.equal(api.status, 429)
      assert.match(((await api.json()) as { msg: string }).msg, /this account/)

      // Other spellings of the same account are the same account: upper case is its bucket (429),
      // and `İ`, which JavaScript lower-cases to `i` and a combining dot where Supabase Auth's Go
      // reads `i`, is no e-mail to the page (the field's own check turned off, as a script would).
      await page.evaluate('document.forms[0].noValidate = true')
      const upper = await signIn(page, GUESSED.toUpperCase(), PASSWORD, '198.51.100.15')
      assert.equal(upper.status, 429)
      await page.evaluate('document.forms[0].noValidate = true')
      const dotted = await signIn(page, GUESSED.replace('i', '\u0130'), PASSWORD, '198.51.100.16')
      assert.equal(dotted.status, 400)
      assert.match(dotted.alert, /not right/)
      assert.equal(passwordGrants() - grantsBefore, 5, 'no other spelling reached Supabase Auth')
    } finally {
      await page.close()
    }
  })

  it('an authorization Supabase Auth never opened is answered as a wrong password, and no password is asked', async () => {
    const page = await context.newPage()
    try {
      await page.goto(`${stack.publicOrigin}${OAUTH_CONSENT_PATH}?authorization_id=madeupauthorizationid0000000000`)
      const grantsBefore = passwordGrants()
      const wrong = await signIn(page, OTHER, 'not-the-password', '203.0.113.1')
      const right = await signIn(page, OTHER, PASSWORD, '203.0.113.2')
      assert.equal(passwordGrants(), grantsBefore, 'Supabase Auth was asked for no password')
      assert.equal(wrong.status, 400)
      assert.equal(right.status, 400)
      assert.equal(right.body, wrong.body, 'the right password answers exactly as a wrong one')
      assert.match(right.alert, /not right/)

      // The same account on an authorization Supabase Auth opened signs in; the browser is a known device.
      await openAuthorization(page)
      const signedIn = await signIn(page, OTHER, PASSWORD, '203.0.113.3')
      assert.equal(signedIn.status, 200)
      assert.match((await page.textContent('h1')) ?? '', /Authorize Consent sign-in test/)
      assert.equal(passwordGrants(), grantsBefore + 1)
      const device = (await context.cookies(`${stack.publicOrigin}${OAUTH_CONSENT_PATH}`)).find(
        (c) => c.name === 'authgate-device',
      )
      assert.ok(device, 'the page issues the device cookie POST /token issues')
      assert.equal(device.path, OAUTH_CONSENT_PATH)
    } finally {
      await page.close()
    }
  })
})

/** The client's redirect URI (a page saying where the browser landed) and another site's auto-posting form. */
async function startClientSite() {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    if (url.pathname !== '/other-site')
      return void res.end('<!doctype html><title>Client</title><p>Back at the client.</p>')
    const target = url.searchParams.get('target')!
    url.searchParams.delete('target')
    const inputs = [...url.searchParams].map(([k, v]) => `<input name="${k}" value="${v}">`).join('')
    res.end(
      `<!doctype html><form method="post" action="${target}">${inputs}</form><script>document.forms[0].submit()</script>`,
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    redirect: `http://localhost:${port}/cb`,
    /** The same server under another site's name (127.0.0.1, not localhost). */
    otherSite: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** The application's page on authgate's origin: it signs in with the cookie, as supabase-js in cookie mode does. */
const APP_PAGE = `<!doctype html><title>app</title><script>
  window.signIn = async (email, password) => (await fetch('/auth/token?grant_type=password', {
    method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })).status
</script>`

/**
 * The page with cookie sessions (AUTHGATE_SESSION_OAUTH_CONSENT): the user signed in to the
 * application is shown the consent on the navigation from /oauth/authorize, decides with the cookie
 * and the form's CSRF token, and a form on another site is refused.
 */
describe('the consent page takes the session cookie, in Chromium', { skip: unavailable }, () => {
  const EMAIL = 'consent-cookie@example.com'
  let stack: Stack
  let browser: Browser
  let site: Awaited<ReturnType<typeof startClientSite>>
  let clientId = ''

  before(async () => {
    site = await startClientSite()
    stack = await startStack({
      database: 'authgate_e2e_consent_cookie',
      sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }], oauthConsentMs: 300_000 },
      consentPage: { path: OAUTH_CONSENT_PATH },
      beforeListen: (app) => {
        app.get('/app', { schema: { hide: true } }, async (_request, reply) =>
          reply.type('text/html; charset=utf-8').send(APP_PAGE),
        )
      },
    })
    const created = await fetch(`${stack.backend.url}/admin/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.backend.serviceRoleJwt()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD, email_confirm: true }),
    })
    assert.equal(created.status, 200, await created.text())
    const registered = await fetch(`${stack.url}/auth/oauth/clients/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Cookie client',
        redirect_uris: [site.redirect],
        token_endpoint_auth_method: 'none',
      }),
    })
    const client = await registered.text()
    assert.equal(registered.status, 201, client)
    clientId = (JSON.parse(client) as { client_id: string }).client_id
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await site?.close()
    await stack?.stop()
  })

  const authorizeUrl = () => {
    const url = new URL(`${stack.publicUrl}/oauth/authorize`)
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: site.redirect,
      response_type: 'code',
      scope: 'openid email',
      state: 'cookie-state',
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString()
    return url.href
  }

  it('signed in to the application, the user is shown the consent, approves, and a form on another site is refused', async () => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(`${stack.publicOrigin}/app`)
      assert.equal(await page.evaluate(([e, p]) => (globalThis as any).signIn(e, p), [EMAIL, PASSWORD]), 200)

      const answer = await page.goto(authorizeUrl())
      assert.equal(answer!.status(), 200)
      assert.equal(new URL(page.url()).pathname, OAUTH_CONSENT_PATH)
      assert.match((await page.textContent('h1')) ?? '', /Authorize Cookie client/)
      assert.equal(
        await page.locator('input[name=access_token]').count(),
        0,
        'the cookie decides: no token in the page',
      )
      const id = await page.inputValue('input[name=authorization_id]')
      const csrf = await page.inputValue('input[name=csrf]')

      // Another site's form, even with the page's own fields: refused (its Origin), nothing decided.
      const other = await context.newPage()
      const [forged] = await Promise.all([
        other.waitForResponse((r) => r.url().startsWith(`${stack.publicOrigin}${OAUTH_CONSENT_PATH}`)),
        other.goto(
          `${site.otherSite}/other-site?${new URLSearchParams({ target: `${stack.publicOrigin}${OAUTH_CONSENT_PATH}`, authorization_id: id, csrf, decision: 'approve' })}`,
        ),
      ])
      assert.equal(forged.status(), 403)
      await other.close()

      await Promise.all([page.waitForURL((u) => u.href.startsWith(site.redirect)), page.click('text=Approve')])
      const callback = new URL(page.url())
      assert.equal(callback.searchParams.get('state'), 'cookie-state')
      assert.equal(callback.searchParams.get('iss'), stack.publicUrl)
      assert.ok(callback.searchParams.get('code'))
    } finally {
      await context.close()
    }
  })
})
