import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { verifyJwsWithJwks } from './support/jws.ts'
import { entries, fetchRedirect, htmlEscaped, type RedirectSnapshot } from './support/redirect-snapshot.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

const APP_URL = 'http://localhost:3000/welcome'
const PASSWORD = 'correct-horse-battery-4'

interface GeneratedLink {
  id: string
  action_link: string
  hashed_token: string
  verification_type: string
  redirect_to: string
}

/**
 * Redirect routes are relayed byte for byte: what a browser gets from authgate must equal what it
 * would get from Supabase Auth for the same request. Tokens are single use, so the gateway and the
 * direct request each get their own; only the token-derived parts may then differ.
 */
describe("e-mail links and provider redirects through authgate equal the backend's", () => {
  let stack: Stack
  let jwks: { keys: Array<{ kid?: string; alg?: string }> }

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_redirects' })
    jwks = (await (await fetch(`${stack.url}/auth/.well-known/jwks.json`)).json()) as typeof jwks
  })

  after(async () => {
    await stack?.stop()
  })

  async function generateLink(body: Record<string, unknown>): Promise<GeneratedLink> {
    // The admin API is not mounted on authgate: operators call Supabase Auth directly.
    const response = await fetch(`${stack.backend.url}/admin/generate_link`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.backend.serviceRoleJwt()}` },
      body: JSON.stringify(body),
    })
    assert.equal(response.status, 200)
    return (await response.json()) as GeneratedLink
  }

  async function signUp(email: string): Promise<void> {
    const response = await fetch(`${stack.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    assert.equal(response.status, 200)
    await response.body?.cancel()
  }

  /** Same status, headers, Location structure and body; tokens valid and for the right user. */
  function assertSameSessionRedirect(
    viaGateway: RedirectSnapshot,
    direct: RedirectSnapshot,
    users: { viaGateway: string; direct: string },
  ): void {
    assert.equal(viaGateway.status, 303)
    assert.equal(direct.status, 303)
    // The backend's headers, and authgate's request id on top (only through authgate).
    assert.deepEqual(Object.keys(viaGateway.headers).sort(), Object.keys(direct.headers).sort())
    assert.match(viaGateway.requestId ?? '', /^[0-9a-f-]{36}$/)
    assert.equal(direct.requestId, undefined)
    for (const name of ['content-type', 'vary']) {
      assert.equal(viaGateway.headers[name], direct.headers[name], name)
    }
    assert.equal(viaGateway.headers['sb-auth-user-id'], users.viaGateway)
    assert.equal(direct.headers['sb-auth-user-id'], users.direct)
    const [gatewayBase, gatewayFragment = ''] = viaGateway.location.split('#')
    const [directBase, directFragment = ''] = direct.location.split('#')
    assert.equal(gatewayBase, APP_URL)
    assert.equal(gatewayBase, directBase)
    const gatewayParams = entries(gatewayFragment)
    const directParams = entries(directFragment)
    assert.deepEqual(
      gatewayParams.map(([key]) => key),
      directParams.map(([key]) => key),
    )
    const tokenBound = new Set(['access_token', 'refresh_token', 'expires_at'])
    for (const [index, [key, value]] of gatewayParams.entries()) {
      if (!tokenBound.has(key)) assert.equal(value, directParams[index]?.[1], key)
    }
    const subject = (params: Array<[string, string]>) =>
      verifyJwsWithJwks(new URLSearchParams(params).get('access_token') ?? '', jwks).sub
    assert.equal(subject(gatewayParams), users.viaGateway)
    assert.equal(subject(directParams), users.direct)
    assert.equal(viaGateway.body, `<a href="${htmlEscaped(viaGateway.location)}">See Other</a>.\n\n`)
    assert.equal(direct.body, `<a href="${htmlEscaped(direct.location)}">See Other</a>.\n\n`)
  }

  it(
    "magic link: generate_link's action_link is authgate's /verify and answers like the backend",
    needsBackend,
    async () => {
      const email = 'magic@example.com'
      await signUp(email)
      const first = await generateLink({ type: 'magiclink', email, redirect_to: APP_URL })
      const link = new URL(first.action_link)
      assert.equal(link.origin + link.pathname, `${stack.publicUrl}/verify`)
      assert.deepEqual(entries(link.search.slice(1)), [
        ['token', first.hashed_token],
        ['type', 'magiclink'],
        ['redirect_to', APP_URL],
      ])
      // The very URL of the e-mail, as a browser opens it.
      const viaGateway = await fetchRedirect(first.action_link)

      const second = await generateLink({ type: 'magiclink', email, redirect_to: APP_URL })
      const query = new URLSearchParams({
        token: second.hashed_token,
        type: second.verification_type,
        redirect_to: APP_URL,
      })
      const direct = await fetchRedirect(`${stack.backend.url}/verify?${query}`)

      assertSameSessionRedirect(viaGateway, direct, { viaGateway: first.id, direct: first.id })
      assert.equal(new URLSearchParams(viaGateway.location.split('#')[1]).get('type'), 'magiclink')

      // Replaying a used link fails the same way on both paths, to the byte.
      const replayViaGateway = await fetchRedirect(first.action_link)
      const replayDirect = await fetchRedirect(`${stack.backend.url}/verify?${query}`)
      assert.deepEqual(replayViaGateway, replayDirect)
      assert.equal(replayViaGateway.status, 303)
      const error = new URLSearchParams(replayViaGateway.location.split('#')[1])
      assert.equal(error.get('error_code'), 'otp_expired')
      assert.equal(error.get('error'), 'access_denied')
    },
  )

  it('sign-up confirmation link through authgate answers like the backend', needsBackend, async () => {
    const first = await generateLink({
      type: 'signup',
      email: 'confirm-one@example.com',
      password: PASSWORD,
      redirect_to: APP_URL,
    })
    const second = await generateLink({
      type: 'signup',
      email: 'confirm-two@example.com',
      password: PASSWORD,
      redirect_to: APP_URL,
    })
    const query = (link: GeneratedLink) =>
      new URLSearchParams({ token: link.hashed_token, type: link.verification_type, redirect_to: APP_URL })
    const viaGateway = await fetchRedirect(`${stack.url}/auth/verify?${query(first)}`)
    const direct = await fetchRedirect(`${stack.backend.url}/verify?${query(second)}`)
    assert.equal(first.verification_type, 'signup')
    // Two users here: only what is bound to the user or the token may differ.
    assertSameSessionRedirect(viaGateway, direct, { viaGateway: first.id, direct: second.id })
    assert.equal(new URLSearchParams(viaGateway.location.split('#')[1]).get('type'), 'signup')
  })

  it("GET /verify without a token gets the backend's own 400 JSON, identical", needsBackend, async () => {
    const viaGateway = await fetchRedirect(`${stack.url}/auth/verify?type=magiclink`)
    const direct = await fetchRedirect(`${stack.backend.url}/verify?type=magiclink`)
    assert.deepEqual(viaGateway, direct)
    assert.equal(viaGateway.status, 400)
  })

  it('/authorize?provider=github: same 302 and Location except the per-request state', needsBackend, async () => {
    const query = `provider=github&redirect_to=${encodeURIComponent(APP_URL)}&scopes=read:org`
    const viaGateway = await fetchRedirect(`${stack.url}/auth/authorize?${query}`)
    const direct = await fetchRedirect(`${stack.backend.url}/authorize?${query}`)
    assert.equal(viaGateway.status, 302)
    assert.equal(direct.status, 302)
    assert.deepEqual(viaGateway.headers, direct.headers)

    const gatewayLocation = new URL(viaGateway.location)
    const directLocation = new URL(direct.location)
    assert.equal(gatewayLocation.origin + gatewayLocation.pathname, 'https://github.com/login/oauth/authorize')
    assert.equal(gatewayLocation.origin + gatewayLocation.pathname, directLocation.origin + directLocation.pathname)
    const gatewayState = gatewayLocation.searchParams.get('state') ?? ''
    const directState = directLocation.searchParams.get('state') ?? ''
    assert.match(gatewayState, /^[0-9a-f-]{36}$/)
    assert.match(directState, /^[0-9a-f-]{36}$/)
    assert.notEqual(gatewayState, directState)
    const withoutState = (url: URL) => [...url.searchParams].filter(([key]) => key !== 'state')
    assert.deepEqual(withoutState(gatewayLocation), withoutState(directLocation))
    assert.equal(gatewayLocation.searchParams.get('redirect_uri'), `${stack.publicUrl}/callback`)
    assert.equal(viaGateway.location.replace(gatewayState, 'STATE'), direct.location.replace(directState, 'STATE'))
    assert.equal(viaGateway.body.replace(gatewayState, 'STATE'), direct.body.replace(directState, 'STATE'))
  })

  it('/callback with an unknown state: identical 303 to the site URL', needsBackend, async () => {
    const query = 'state=00000000-0000-4000-8000-000000000000&code=bogus'
    const viaGateway = await fetchRedirect(`${stack.url}/auth/callback?${query}`)
    const direct = await fetchRedirect(`${stack.backend.url}/callback?${query}`)
    assert.deepEqual(viaGateway, direct)
    assert.equal(viaGateway.status, 303)
    assert.ok(viaGateway.location.startsWith(`${stack.publicOrigin}?error=`), viaGateway.location)
  })

  it('POST /callback (form_post) with an unknown state: identical 303', needsBackend, async () => {
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'state=00000000-0000-4000-8000-000000000000&code=bogus',
    }
    const viaGateway = await fetchRedirect(`${stack.url}/auth/callback`, init)
    const direct = await fetchRedirect(`${stack.backend.url}/callback`, init)
    assert.deepEqual(viaGateway, direct)
    assert.equal(viaGateway.status, 303)
    assert.match(viaGateway.location, /error_code=bad_oauth_state/)
  })
})
