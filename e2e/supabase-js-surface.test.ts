import assert from 'node:assert/strict'
import { after, before, describe, it, test } from 'node:test'
import { GoTrueClient } from '@supabase/auth-js'
import { recordingFetch } from './support/recording-fetch.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'
import { base32Decode, totp } from './support/totp.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }
const PASSWORD = 'correct-horse-battery-9'

const clientAt = (url: string, fetchFn?: typeof fetch) =>
  new GoTrueClient({
    url,
    persistSession: false,
    autoRefreshToken: false,
    detectSessionInUrl: false,
    ...(fetchFn ? { fetch: fetchFn } : {}),
  })

/** The parts of an error an application branches on. */
const shape = (error: { status?: number; code?: string; message?: string } | null) =>
  error === null ? null : { status: error.status, code: error.code, message: error.message }

test('the TOTP helper meets RFC 6238 (appendix B, SHA-1)', () => {
  const secret = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ' // base32 of "12345678901234567890"
  assert.equal(base32Decode(secret).toString(), '12345678901234567890')
  assert.equal(totp(secret, 59_000, 30, 8), '94287082')
  assert.equal(totp(secret, 1_111_111_109_000, 30, 8), '07081804')
  assert.equal(totp(secret, 20_000_000_000_000, 30, 8), '65353130')
})

/**
 * supabase-js features beyond sign-up and sign-in, run through authgate only (the client's fetch
 * records every call and its status), and compared with Supabase Auth's direct answer where the
 * feature is off.
 */
describe('supabase-js: MFA, anonymous users, identity linking and SSO through authgate', () => {
  let stack: Stack
  const recorder = recordingFetch()
  let client: GoTrueClient

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_surface' })
    client = clientAt(`${stack.url}/auth`, recorder.fetch)
  })

  after(async () => {
    await stack?.stop()
  })

  describe('TOTP multi-factor authentication', () => {
    let factorId = ''
    let secret = ''

    it('enrols a TOTP factor', needsBackend, async () => {
      const { error: signUpError } = await client.signUp({ email: 'mfa@example.com', password: PASSWORD })
      assert.equal(signUpError, null)
      const { data, error } = await client.mfa.enroll({ factorType: 'totp', friendlyName: 'phone app' })
      assert.equal(error, null)
      assert.ok(data)
      assert.equal(data.type, 'totp')
      assert.equal(data.friendly_name, 'phone app')
      assert.match(data.totp.secret, /^[A-Z2-7]+=*$/)
      assert.match(data.totp.uri, /^otpauth:\/\/totp\//)
      factorId = data.id
      secret = data.totp.secret
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/factors', status: 200 })
      const aal = await client.mfa.getAuthenticatorAssuranceLevel()
      assert.equal(aal.data?.currentLevel, 'aal1')
    })

    it("refuses a wrong code with Supabase Auth's error", needsBackend, async () => {
      const { data: challenge, error } = await client.mfa.challenge({ factorId })
      assert.equal(error, null)
      assert.ok(challenge)
      const good = totp(secret)
      const wrong = good === '000000' ? '000001' : '000000'
      const { error: refused } = await client.mfa.verify({ factorId, challengeId: challenge.id, code: wrong })
      assert.equal(refused?.code, 'mfa_verification_failed')
      assert.equal(refused?.status, 422)
      assert.deepEqual(recorder.last(), {
        method: 'POST',
        target: `/auth/factors/${factorId}/verify`,
        status: 422,
      })
    })

    it(
      'challenges and verifies with a code computed from the secret: the session reaches aal2',
      needsBackend,
      async () => {
        const { data: challenge, error } = await client.mfa.challenge({ factorId })
        assert.equal(error, null)
        assert.ok(challenge)
        assert.equal(challenge.type, 'totp')
        assert.deepEqual(recorder.last(), {
          method: 'POST',
          target: `/auth/factors/${factorId}/challenge`,
          status: 200,
        })

        const { data, error: verifyError } = await client.mfa.verify({
          factorId,
          challengeId: challenge.id,
          code: totp(secret),
        })
        assert.equal(verifyError, null)
        assert.ok(data?.access_token)
        assert.deepEqual(recorder.last(), { method: 'POST', target: `/auth/factors/${factorId}/verify`, status: 200 })

        const aal = await client.mfa.getAuthenticatorAssuranceLevel()
        assert.equal(aal.data?.currentLevel, 'aal2')
        assert.equal(aal.data?.nextLevel, 'aal2')
        const claims = JSON.parse(Buffer.from(data.access_token.split('.')[1]!, 'base64url').toString()) as {
          aal: string
          amr: Array<{ method: string }>
        }
        assert.equal(claims.aal, 'aal2')
        assert.ok(claims.amr.some((m) => m.method === 'totp'))

        const { data: factors } = await client.mfa.listFactors()
        assert.deepEqual(
          factors?.totp.map((f) => [f.id, f.status]),
          [[factorId, 'verified']],
        )
      },
    )

    it('unenrols the factor (DELETE with Content-Type JSON and no body)', needsBackend, async () => {
      const { data, error } = await client.mfa.unenroll({ factorId })
      assert.equal(error, null)
      assert.equal(data?.id, factorId)
      assert.deepEqual(recorder.last(), { method: 'DELETE', target: `/auth/factors/${factorId}`, status: 200 })
      const { data: user } = await client.getUser()
      assert.equal(user.user?.factors?.length ?? 0, 0)
      await client.signOut()
    })
  })

  describe('anonymous sign-in', () => {
    it(
      'signs in anonymously (no e-mail, phone or password), then converts the user with updateUser',
      needsBackend,
      async () => {
        const { data, error } = await client.signInAnonymously({ options: { data: { theme: 'dark' } } })
        assert.equal(error, null)
        assert.ok(data.session)
        assert.equal(data.user?.is_anonymous, true)
        assert.equal(data.user?.user_metadata.theme, 'dark')
        assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/signup', status: 200 })
        const anonymousId = data.user?.id

        // E-mail first (confirmed at once here: the backend auto-confirms), then a password.
        const withEmail = await client.updateUser({ email: 'former-guest@example.com' })
        assert.equal(withEmail.error, null)
        assert.deepEqual(recorder.last(), { method: 'PUT', target: '/auth/user', status: 200 })
        const withPassword = await client.updateUser({ password: PASSWORD })
        assert.equal(withPassword.error, null)
        assert.equal(withPassword.data.user?.id, anonymousId)
        assert.equal(withPassword.data.user?.email, 'former-guest@example.com')
        assert.equal(withPassword.data.user?.is_anonymous, false)

        await client.signOut()
        const again = await client.signInWithPassword({ email: 'former-guest@example.com', password: PASSWORD })
        assert.equal(again.error, null)
        assert.equal(again.data.user?.id, anonymousId)
        await client.signOut()
      },
    )
  })

  describe('features turned off on Supabase Auth answer as Supabase Auth does', () => {
    let direct: GoTrueClient

    before(async () => {
      if (unavailable !== undefined) return
      direct = clientAt(stack.backend.url)
      assert.equal((await client.signUp({ email: 'links@example.com', password: PASSWORD })).error, null)
      assert.equal((await direct.signInWithPassword({ email: 'links@example.com', password: PASSWORD })).error, null)
    })

    it('linkIdentity without manual linking: 404 manual_linking_disabled', needsBackend, async () => {
      const through = await client.linkIdentity({ provider: 'github', options: { skipBrowserRedirect: true } })
      const straight = await direct.linkIdentity({ provider: 'github', options: { skipBrowserRedirect: true } })
      assert.deepEqual(shape(through.error), shape(straight.error))
      assert.equal(through.error?.code, 'manual_linking_disabled')
      assert.equal(through.error?.status, 404)
      const call = recorder.last()
      assert.equal(call.method, 'GET')
      assert.match(call.target, /^\/auth\/user\/identities\/authorize\?.*skip_http_redirect=true/)
      assert.equal(call.status, 404)
    })

    it('unlinkIdentity without manual linking: 404 manual_linking_disabled', needsBackend, async () => {
      const { data } = await client.getUserIdentities()
      const identity = data?.identities[0]
      assert.ok(identity)
      const through = await client.unlinkIdentity(identity)
      const straight = await direct.unlinkIdentity(identity)
      assert.deepEqual(shape(through.error), shape(straight.error))
      assert.equal(through.error?.code, 'manual_linking_disabled')
      assert.deepEqual(recorder.last(), {
        method: 'DELETE',
        target: `/auth/user/identities/${identity.identity_id}`,
        status: 404,
      })
    })

    it('signInWithSSO without SAML: 404 saml_provider_disabled', needsBackend, async () => {
      const through = await client.signInWithSSO({ domain: 'example.com' })
      const straight = await direct.signInWithSSO({ domain: 'example.com' })
      assert.deepEqual(shape(through.error), shape(straight.error))
      assert.equal(through.error?.code, 'saml_provider_disabled')
      assert.equal(through.error?.status, 404)
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/sso', status: 404 })
    })

    it('the SAML metadata and ACS relays give the same answer as Supabase Auth', needsBackend, async () => {
      for (const [method, path, body] of [
        ['GET', '/sso/saml/metadata?download=true', undefined],
        ['POST', '/sso/saml/acs', 'SAMLResponse=PHNhbWw%2BPC9zYW1sPg%3D%3D&RelayState=x'],
      ] as const) {
        const init = {
          method,
          ...(body ? { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {}),
          redirect: 'manual' as const,
        }
        const through = await fetch(`${stack.url}/auth${path}`, init)
        const straight = await fetch(`${stack.backend.url}${path}`, init)
        assert.equal(through.status, straight.status, path)
        assert.equal(await through.text(), await straight.text(), path)
      }
    })
  })

  describe('the remaining sign-in calls reach Supabase Auth and answer as it does', () => {
    let direct: GoTrueClient

    before(async () => {
      if (unavailable !== undefined) return
      direct = clientAt(stack.backend.url)
    })

    it('signInWithIdToken (POST /token?grant_type=id_token)', needsBackend, async () => {
      const through = await client.signInWithIdToken({ provider: 'google', token: 'not-a-real-id-token' })
      const straight = await direct.signInWithIdToken({ provider: 'google', token: 'not-a-real-id-token' })
      assert.ok(through.error)
      assert.deepEqual(shape(through.error), shape(straight.error))
      assert.deepEqual(recorder.last(), {
        method: 'POST',
        target: '/auth/token?grant_type=id_token',
        status: through.error.status,
      })
    })

    it('signInWithWeb3, Ethereum and Solana (POST /token?grant_type=web3)', needsBackend, async () => {
      const attempts = [
        { chain: 'ethereum' as const, message: 'example.com wants you to sign in', signature: '0x00' as const },
        { chain: 'solana' as const, message: 'example.com wants you to sign in', signature: new Uint8Array(64) },
      ]
      for (const credentials of attempts) {
        const through = await client.signInWithWeb3(credentials)
        const straight = await direct.signInWithWeb3(credentials)
        assert.ok(through.error, credentials.chain)
        assert.deepEqual(shape(through.error), shape(straight.error), credentials.chain)
        assert.equal(recorder.last().target, '/auth/token?grant_type=web3')
      }
    })

    it('exchangeCodeForSession (POST /token?grant_type=pkce) with an unknown code', needsBackend, async () => {
      const pkce = (url: string, fetchFn?: typeof fetch) =>
        new GoTrueClient({
          url,
          flowType: 'pkce',
          persistSession: false,
          autoRefreshToken: false,
          detectSessionInUrl: false,
          ...(fetchFn ? { fetch: fetchFn } : {}),
        })
      const throughClient = pkce(`${stack.url}/auth`, recorder.fetch)
      const directClient = pkce(stack.backend.url)
      // Starting a PKCE flow stores the verifier the exchange sends.
      assert.equal((await throughClient.signInWithOtp({ email: 'pkce@example.com' })).error, null)
      assert.equal((await directClient.signInWithOtp({ email: 'pkce@example.com' })).error, null)
      const code = '00000000-0000-4000-8000-000000000000'
      const through = await throughClient.exchangeCodeForSession(code)
      const straight = await directClient.exchangeCodeForSession(code)
      assert.ok(through.error)
      assert.deepEqual(shape(through.error), shape(straight.error))
      assert.equal(recorder.last().target, '/auth/token?grant_type=pkce')
    })

    it('getClaims fetches the signing keys through authgate and verifies the ES256 token', needsBackend, async () => {
      const signedIn = await client.signInWithPassword({ email: 'mfa@example.com', password: PASSWORD })
      assert.equal(signedIn.error, null)
      const { data, error } = await client.getClaims()
      assert.equal(error, null)
      assert.equal(data?.claims.sub, signedIn.data.user?.id)
      assert.equal(data?.header.alg, 'ES256')
      assert.ok(recorder.calls.some((c) => c.target === '/auth/.well-known/jwks.json' && c.status === 200))
    })

    it('setSession with a live session reads the user (GET /user)', needsBackend, async () => {
      const { data } = await client.getSession()
      assert.ok(data.session)
      const other = clientAt(`${stack.url}/auth`, recorder.fetch)
      const set = await other.setSession({
        access_token: data.session.access_token,
        refresh_token: data.session.refresh_token,
      })
      assert.equal(set.error, null)
      assert.equal(set.data.user?.email, 'mfa@example.com')
      assert.deepEqual(recorder.last(), { method: 'GET', target: '/auth/user', status: 200 })
      await client.signOut()
    })

    it('linkIdentity with an ID token (grant id_token, link_identity: true, user bearer)', needsBackend, async () => {
      assert.equal((await client.signInWithPassword({ email: 'links@example.com', password: PASSWORD })).error, null)
      assert.equal((await direct.signInWithPassword({ email: 'links@example.com', password: PASSWORD })).error, null)
      const through = await client.linkIdentity({ provider: 'google', token: 'not-a-real-id-token' })
      const straight = await direct.linkIdentity({ provider: 'google', token: 'not-a-real-id-token' })
      assert.ok(through.error)
      assert.deepEqual(shape(through.error), shape(straight.error))
      assert.equal(recorder.last().target, '/auth/token?grant_type=id_token')
      await client.signOut()
    })
  })
})

/** With manual linking on, the identity routes do their work through authgate. */
describe('identity linking through authgate (manual linking on)', () => {
  let stack: Stack
  const recorder = recordingFetch()
  let client: GoTrueClient

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({
      database: 'authgate_e2e_linking',
      extraEnv: { GOTRUE_SECURITY_MANUAL_LINKING_ENABLED: 'true' },
    })
    client = clientAt(`${stack.url}/auth`, recorder.fetch)
    assert.equal((await client.signUp({ email: 'linker@example.com', password: PASSWORD })).error, null)
  })

  after(async () => {
    await stack?.stop()
  })

  it('linkIdentity gets the provider URL as JSON (skip_http_redirect=true)', needsBackend, async () => {
    const { data, error } = await client.linkIdentity({
      provider: 'github',
      options: { skipBrowserRedirect: true, redirectTo: 'http://localhost:3000/linked' },
    })
    assert.equal(error, null)
    const url = new URL(data?.url ?? '')
    assert.equal(url.origin + url.pathname, 'https://github.com/login/oauth/authorize')
    assert.equal(url.searchParams.get('client_id'), 'authgate-e2e-client')
    assert.equal(url.searchParams.get('redirect_uri'), `${stack.publicUrl}/callback`)
    assert.equal(recorder.last().status, 200)
  })

  it('without skip_http_redirect the route redirects (302), as Supabase Auth does', needsBackend, async () => {
    const { data } = await client.getSession()
    const init = { headers: { authorization: `Bearer ${data.session?.access_token}` }, redirect: 'manual' as const }
    const through = await fetch(`${stack.url}/auth/user/identities/authorize?provider=github`, init)
    const straight = await fetch(`${stack.backend.url}/user/identities/authorize?provider=github`, init)
    assert.equal(through.status, 302)
    assert.equal(straight.status, 302)
    const a = new URL(through.headers.get('location') ?? '')
    const b = new URL(straight.headers.get('location') ?? '')
    assert.equal(a.origin + a.pathname, b.origin + b.pathname)
  })

  it('unlinkIdentity of the only identity: 422 single_identity_not_deletable, as directly', needsBackend, async () => {
    const { data } = await client.getUserIdentities()
    const identity = data?.identities[0]
    assert.ok(identity)
    const through = await client.unlinkIdentity(identity)
    assert.equal(through.error?.code, 'single_identity_not_deletable')
    assert.equal(through.error?.status, 422)
    assert.deepEqual(recorder.last(), {
      method: 'DELETE',
      target: `/auth/user/identities/${identity.identity_id}`,
      status: 422,
    })
    const direct = clientAt(stack.backend.url)
    await direct.signInWithPassword({ email: 'linker@example.com', password: PASSWORD })
    const straight = await direct.unlinkIdentity(identity)
    assert.deepEqual(shape(through.error), shape(straight.error))
  })
})
