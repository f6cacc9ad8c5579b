import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import type { Browser, CDPSession, Page } from 'playwright-core'
import { chromiumUnavailableReason, launchChromium } from './support/chromium.ts'
import { decodeJws } from './support/jws.ts'
import { postgresTarget, runPsql } from '../scripts/supabase-auth/postgres.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = (await backendUnavailableReason()) ?? (await chromiumUnavailableReason())
const needsBrowser = { skip: unavailable }

const PAGE_PATH = '/e2e/passkey.html'
const ARTIFACTS = new URL('../artifacts/', import.meta.url)

interface CallResult<T = unknown> {
  status: number
  body: T
}
interface Ceremony<T> {
  options: CallResult<{ challenge_id: string; options: Record<string, unknown> }>
  credentialId?: string
  verify?: CallResult<T>
}
interface PasskeyItem {
  id: string
  friendly_name?: string
  created_at: string
  last_used_at?: string
}
interface Session {
  access_token: string
  refresh_token: string
  user: { id: string; email: string }
}

/**
 * A real browser registers and uses a passkey on a page served from authgate's own origin (the
 * WebAuthn RP origin Supabase Auth is configured with), talking to authgate only.
 */
describe('passkeys in headless Chromium through authgate', () => {
  let stack: Stack
  let browser: Browser
  let page: Page
  let cdp: CDPSession
  let authenticatorId = ''
  let userToken = ''
  let userId = ''
  let passkeyId = ''

  before(async () => {
    if (unavailable !== undefined) return
    const html = await readFile(new URL('./pages/passkey.html', import.meta.url), 'utf8')
    stack = await startStack({
      database: 'authgate_e2e_passkeys',
      // Cookie sessions only for requests that ask (X-Authgate-Session: cookie): the other tests use tokens.
      sessions: { mode: 'request', keys: [{ id: 'k1', key: randomBytes(32) }] },
      beforeListen: (app) => {
        app.get(PAGE_PATH, async (_request, reply) => reply.type('text/html; charset=utf-8').send(html))
      },
    })
    const response = await fetch(`${stack.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'passkey-user@example.com', password: 'correct-horse-battery-3' }),
    })
    const session = (await response.json()) as Session
    userToken = session.access_token
    userId = session.user.id

    browser = await launchChromium()
    const context = await browser.newContext()
    page = await context.newPage()
    cdp = await context.newCDPSession(page)
    await cdp.send('WebAuthn.enable', { enableUI: false })
    const added = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    })
    authenticatorId = added.authenticatorId
    // WebAuthn refuses IP addresses as RP ids: the page must be on http://localhost:<port>.
    await page.goto(`${stack.publicOrigin}${PAGE_PATH}?prefix=${stack.prefix}`)
  })

  after(async () => {
    if (page) {
      await mkdir(ARTIFACTS, { recursive: true })
      await page
        .screenshot({ path: new URL('passkeys.png', ARTIFACTS).pathname, fullPage: true })
        .catch(() => undefined)
    }
    await browser?.close()
    await stack?.stop()
  })

  it("serves the page from authgate's origin", needsBrowser, async () => {
    assert.equal(new URL(page.url()).origin, stack.publicOrigin)
    assert.equal(
      await page.evaluate(() => window.isSecureContext),
      true,
      'WebAuthn needs a secure context (localhost is one)',
    )
  })

  it('registers a passkey (options → navigator.credentials.create → verify)', needsBrowser, async () => {
    const result = await page.evaluate((token) => (window as unknown as E2eWindow).e2e.register(token), userToken)
    assert.equal(result.options.status, 200)
    assert.equal((result.options.body.options.rp as { id: string }).id, 'localhost')
    assert.equal(result.verify?.status, 200, JSON.stringify(result.verify?.body))
    const created = result.verify?.body as PasskeyItem
    assert.match(created.id, /^[0-9a-f-]{36}$/)
    passkeyId = created.id

    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
    assert.equal(credentials.length, 1)
    assert.equal(credentials[0]?.isResidentCredential, true)
    assert.equal(credentials[0]?.rpId, 'localhost')
    assert.equal(Buffer.from(credentials[0]?.userHandle ?? '', 'base64').toString('utf8'), userId)
    const stored = await runPsql(
      postgresTarget(),
      stack.backend.database,
      `SELECT count(*) FROM auth.webauthn_credentials WHERE user_id = '${userId}'`,
    )
    assert.equal(stored, '1')
  })

  it('signs in with the passkey and gets a session for that user', needsBrowser, async () => {
    const result = await page.evaluate(() => (window as unknown as E2eWindow).e2e.signIn())
    assert.equal(result.options.status, 200)
    assert.equal(result.verify?.status, 200, JSON.stringify(result.verify?.body))
    const session = result.verify?.body as Session
    assert.equal(session.user.id, userId)
    const claims = decodeJws(session.access_token).payload as { sub?: string; amr?: Array<{ method: string }> }
    assert.equal(claims.sub, userId)
    assert.ok(
      claims.amr?.some((entry) => /passkey|webauthn/.test(entry.method)),
      JSON.stringify(claims.amr),
    )
    userToken = session.access_token
  })

  it('in cookie mode the passkey sign-in answers the HttpOnly cookie and stand-ins', needsBrowser, async () => {
    // The page asks for a cookie session on its next calls, as an application moving over would.
    await page.evaluate(() => {
      const plain = window.fetch
      ;(window as unknown as { plainFetch: typeof fetch }).plainFetch = plain
      window.fetch = (input, init = {}) =>
        plain(input, { ...init, headers: { ...(init.headers as object), 'x-authgate-session': 'cookie' } })
    })
    try {
      const result = await page.evaluate(() => (window as unknown as E2eWindow).e2e.signIn())
      assert.equal(result.verify?.status, 200, JSON.stringify(result.verify?.body))
      const body = result.verify?.body as Partial<Session>
      assert.equal(body.user?.id, userId)
      // Stand-ins for the tokens (docs/sessions.md), never the real ones.
      const standIns = stack.app.authgate.sessions!.sessions.standIns
      assert.ok(standIns.isAccess(String(body.access_token)) && standIns.isRefresh(String(body.refresh_token)))
      const cookie = (await page.context().cookies(stack.publicOrigin)).find(
        (c) => c.name === '__Host-authgate-session',
      )
      assert.equal(cookie?.httpOnly, true)
      const stored = await stack.app.authgate.sessions!.sessions.load(cookie!.value)
      const claims = decodeJws(stored!.session.accessToken).payload as { sub?: string; amr?: Array<{ method: string }> }
      assert.equal(claims.sub, userId)
      assert.ok(claims.amr?.some((entry) => /passkey|webauthn/.test(entry.method)))
    } finally {
      await page.evaluate(() => {
        window.fetch = (window as unknown as { plainFetch: typeof fetch }).plainFetch
      })
    }
  })

  it('lists the passkey', needsBrowser, async () => {
    const listed = (await page.evaluate(
      (token) => (window as unknown as E2eWindow).e2e.list(token),
      userToken,
    )) as CallResult<PasskeyItem[]>
    assert.equal(listed.status, 200)
    assert.deepEqual(
      listed.body.map((item) => item.id),
      [passkeyId],
    )
    assert.ok(listed.body[0]?.last_used_at, 'sign-in should have set last_used_at')
  })

  it('renames the passkey (PATCH /passkeys/{id})', needsBrowser, async () => {
    const renamed = (await page.evaluate(
      ([token, id]) => (window as unknown as E2eWindow).e2e.rename(token, id, 'Work laptop'),
      [userToken, passkeyId] as const,
    )) as CallResult<PasskeyItem>
    assert.equal(renamed.status, 200)
    assert.equal(renamed.body.id, passkeyId)
    assert.equal(renamed.body.friendly_name, 'Work laptop')
    // The list item's shape (with last_used_at), not the registration response's.
    assert.ok(renamed.body.last_used_at, JSON.stringify(renamed.body))
  })

  it('deletes the passkey (DELETE /passkeys/{id} → 204) and the list is empty', needsBrowser, async () => {
    const removed = await page.evaluate(([token, id]) => (window as unknown as E2eWindow).e2e.remove(token, id), [
      userToken,
      passkeyId,
    ] as const)
    assert.deepEqual(removed, { status: 204, body: null })
    const listed = await page.evaluate((token) => (window as unknown as E2eWindow).e2e.list(token), userToken)
    assert.deepEqual(listed, { status: 200, body: [] })
  })
})

/** What passkey.html puts on window. */
interface E2eWindow {
  e2e: {
    register(token: string): Promise<Ceremony<PasskeyItem>>
    signIn(): Promise<Ceremony<Session>>
    list(token: string): Promise<CallResult>
    rename(token: string, id: string, name: string): Promise<CallResult>
    remove(token: string, id: string): Promise<CallResult>
  }
}
