import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { GoTrueClient } from '@supabase/auth-js'
import { createClient } from '@supabase/supabase-js'
import { recordingFetch } from './support/recording-fetch.ts'
import { startGateway, startStack, type Gateway, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'
import { TEST_PHONE_OTPS } from '../scripts/supabase-auth/env.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

// Any JWT-looking string: Supabase Auth never reads `apikey` and authgate forwards it untouched.
const ANON_KEY = 'eyJhbGciOiJIUzI1NiJ9.eyJyb2xlIjoiYW5vbiJ9.e2e-anon-key'
const PASSWORD = 'correct-horse-battery-1'

function otpFor(phone: string): string {
  const otp = TEST_PHONE_OTPS[phone]
  if (otp === undefined) throw new Error(`${phone} has no test OTP`)
  return otp
}

describe('official clients through authgate', () => {
  let stack: Stack
  const recorder = recordingFetch()
  let client: GoTrueClient

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_clients' })
    client = new GoTrueClient({
      url: `${stack.url}/auth`,
      persistSession: false,
      autoRefreshToken: false,
      detectSessionInUrl: false,
      fetch: recorder.fetch,
    })
  })

  after(async () => {
    await stack?.stop()
  })

  describe('@supabase/auth-js GoTrueClient at /auth', () => {
    const email = 'ada@example.com'
    let firstAccessToken = ''

    it('signs up with e-mail and gets a session (autoconfirm)', needsBackend, async () => {
      const { data, error } = await client.signUp({ email, password: PASSWORD, options: { data: { plan: 'free' } } })
      assert.equal(error, null)
      assert.ok(data.session, 'autoconfirm must yield a session')
      assert.equal(data.user?.email, email)
      assert.deepEqual(data.user?.user_metadata.plan, 'free')
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/signup', status: 200 })
    })

    it('rejects a second sign-up of the same address with the backend error', needsBackend, async () => {
      const { data, error } = await client.signUp({ email, password: PASSWORD })
      assert.equal(data.session, null)
      assert.equal(error?.code, 'user_already_exists')
      assert.equal(error?.status, 422)
    })

    it(
      'refuses a 5-character password itself, in the words Supabase Auth uses (422 weak_password)',
      needsBackend,
      async () => {
        const { error } = await client.signUp({ email: 'short@example.com', password: 'abcde' })
        assert.equal(error?.status, 422)
        assert.equal(error?.code, 'weak_password')
        assert.deepEqual((error as { reasons?: string[] } | null)?.reasons, ['length'])
        assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/signup', status: 422 })
        const direct = await fetch(`${stack.backend.url}/signup`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'short@example.com', password: 'abcde' }),
        })
        assert.equal(direct.status, 422)
        assert.equal(((await direct.json()) as { error_code?: string }).error_code, 'weak_password')
      },
    )

    it('signs in with the password', needsBackend, async () => {
      const { data, error } = await client.signInWithPassword({ email, password: PASSWORD })
      assert.equal(error, null)
      assert.ok(data.session?.access_token)
      assert.equal(data.user.email, email)
      firstAccessToken = data.session.access_token
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/token?grant_type=password', status: 200 })
    })

    it('rejects a wrong password with invalid_credentials', needsBackend, async () => {
      const other = new GoTrueClient({ url: `${stack.url}/auth`, persistSession: false, autoRefreshToken: false })
      const { error } = await other.signInWithPassword({ email, password: 'wrong-password-1' })
      assert.equal(error?.code, 'invalid_credentials')
      assert.equal(error?.status, 400)
    })

    it('reads the user with getUser', needsBackend, async () => {
      const { data, error } = await client.getUser()
      assert.equal(error, null)
      assert.equal(data.user?.email, email)
      assert.deepEqual(recorder.last(), { method: 'GET', target: '/auth/user', status: 200 })
    })

    it('updates user metadata with updateUser({ data })', needsBackend, async () => {
      const { data, error } = await client.updateUser({ data: { name: 'Ada Lovelace', plan: null } })
      assert.equal(error, null)
      assert.equal(data.user?.user_metadata.name, 'Ada Lovelace')
      // A key set to null is deleted by the backend's shallow merge.
      assert.equal('plan' in (data.user?.user_metadata ?? {}), false)
      assert.deepEqual(recorder.last(), { method: 'PUT', target: '/auth/user', status: 200 })
    })

    it('refreshes the session', needsBackend, async () => {
      const before = (await client.getSession()).data.session
      assert.ok(before)
      const { data, error } = await client.refreshSession()
      assert.equal(error, null)
      assert.ok(data.session)
      assert.notEqual(data.session.refresh_token, before.refresh_token)
      assert.equal(data.session.user.user_metadata.name, 'Ada Lovelace')
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/token?grant_type=refresh_token', status: 200 })
    })

    it('sends a recovery e-mail with resetPasswordForEmail', needsBackend, async () => {
      const { data, error } = await client.resetPasswordForEmail(email, { redirectTo: 'http://localhost:3000/reset' })
      assert.equal(error, null)
      assert.deepEqual(data, {})
      const call = recorder.last()
      assert.equal(call.method, 'POST')
      assert.equal(call.target, `/auth/recover?redirect_to=${encodeURIComponent('http://localhost:3000/reset')}`)
      assert.equal(call.status, 200)
    })

    it('asks for a reauthentication code (auth-js uses GET /reauthenticate)', needsBackend, async () => {
      const { error } = await client.reauthenticate()
      assert.equal(error, null)
      assert.deepEqual(recorder.last(), { method: 'GET', target: '/auth/reauthenticate', status: 200 })
    })

    it(
      'serves POST /reauthenticate (docs/decisions.md, D8) although Supabase Auth only has GET',
      needsBackend,
      async () => {
        const { data } = await client.getSession()
        const token = data.session?.access_token
        assert.ok(token)
        const init = {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: '{}',
        }
        const direct = await fetch(`${stack.backend.url}/reauthenticate`, init)
        await direct.body?.cancel()
        assert.equal(direct.status, 405, 'Supabase Auth has no POST /reauthenticate')
        const viaGateway = await fetch(`${stack.url}/auth/reauthenticate`, init)
        assert.equal(viaGateway.status, 200)
        assert.deepEqual(await viaGateway.json(), {})
      },
    )

    it('signs out (204) and the old session is gone', needsBackend, async () => {
      const { error } = await client.signOut()
      assert.equal(error, null)
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/logout?scope=global', status: 204 })
      assert.equal((await client.getSession()).data.session, null)
      const { error: stale } = await client.getUser(firstAccessToken)
      // auth-js turns the backend's 403 session_not_found into a missing-session error.
      assert.equal(stale?.name, 'AuthSessionMissingError')
      assert.deepEqual(recorder.last(), { method: 'GET', target: '/auth/user', status: 403 })
    })

    it('signs in with a phone OTP (test code) and verifyOtp type sms', needsBackend, async () => {
      const phone = '15550000001'
      const { data: sent, error: sendError } = await client.signInWithOtp({ phone: `+${phone}` })
      assert.equal(sendError, null)
      // Supabase Auth answers `{}` here (no message_id), unlike /resend; see docs/e2e.md.
      assert.equal(sent.session, null)
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/otp', status: 200 })

      const { error: wrongCode } = await client.verifyOtp({ phone: `+${phone}`, token: '000000', type: 'sms' })
      assert.equal(wrongCode?.code, 'otp_expired')

      const { data, error } = await client.verifyOtp({ phone: `+${phone}`, token: otpFor(phone), type: 'sms' })
      assert.equal(error, null)
      assert.ok(data.session?.access_token)
      assert.equal(data.user?.phone, phone)
      assert.ok(data.user?.phone_confirmed_at)
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/verify', status: 200 })
      await client.signOut()
    })

    it('resends the SMS of an unconfirmed phone sign-up, then verifies it', needsBackend, async () => {
      const phone = '15550000002'
      const { data: signedUp, error: signUpError } = await client.signUp({ phone: `+${phone}`, password: PASSWORD })
      assert.equal(signUpError, null)
      assert.equal(signedUp.session, null, 'phone autoconfirm is off: no session before verification')
      assert.equal(signedUp.user?.phone, phone)

      const { data: resent, error } = await client.resend({ type: 'sms', phone: `+${phone}` })
      assert.equal(error, null)
      assert.equal(resent.messageId, 'test-otp')
      assert.deepEqual(recorder.last(), { method: 'POST', target: '/auth/resend', status: 200 })

      const { data, error: verifyError } = await client.verifyOtp({
        phone: `+${phone}`,
        token: otpFor(phone),
        type: 'sms',
      })
      assert.equal(verifyError, null)
      assert.ok(data.session)
      await client.signOut()
    })
  })

  describe('@supabase/supabase-js createClient with authgate at /auth/v1', () => {
    let gateway: Gateway | undefined

    before(async () => {
      if (unavailable !== undefined) return
      gateway = await startGateway(stack.backend, { prefix: '/auth/v1' })
    })

    after(async () => {
      await gateway?.close()
    })

    it('signs up, signs in and reads the user', needsBackend, async () => {
      assert.ok(gateway)
      const recorded = recordingFetch()
      const supabase = createClient(gateway.url, ANON_KEY, {
        auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
        global: { fetch: recorded.fetch },
      })
      const email = 'grace@example.com'
      const signUp = await supabase.auth.signUp({ email, password: PASSWORD })
      assert.equal(signUp.error, null)
      assert.ok(signUp.data.session)
      assert.deepEqual(recorded.last(), { method: 'POST', target: '/auth/v1/signup', status: 200 })

      await supabase.auth.signOut()
      const signIn = await supabase.auth.signInWithPassword({ email, password: PASSWORD })
      assert.equal(signIn.error, null)
      assert.ok(signIn.data.session)

      const { data, error } = await supabase.auth.getUser()
      assert.equal(error, null)
      assert.equal(data.user?.email, email)
      assert.equal(data.user?.id, signUp.data.user?.id)
      assert.deepEqual(recorded.last(), { method: 'GET', target: '/auth/v1/user', status: 200 })
    })
  })
})
