import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { GoTrueClient } from '@supabase/auth-js'
import { importJWK, SignJWT } from 'jose'
import { authgateProtect } from '../src/protect/index.ts'
import { defineRoute } from '../src/routes-dsl/index.ts'
import { generateSigningJwk, type SigningJwk } from '../scripts/supabase-auth/jwt.ts'
import { startGateway, type Gateway } from './support/stack.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }
const PASSWORD = 'correct-horse-battery-1'
/**
 * Tokens short-lived enough that expiry is observed with a real token, long enough that a test
 * signing in and using its token on a loaded two-core machine finishes well inside the lifetime.
 * The expiry test takes its token first and waits for it while the other tests run.
 */
const TOKEN_LIFETIME_SECONDS = 30

/**
 * The application's own routes protected with tokens minted by the real Supabase Auth: verified
 * locally against its key set, with a revocation check where asked, across a key rotation.
 */
describe('protecting application routes with Supabase Auth tokens', () => {
  let backend: SupabaseAuthServer
  let gateway: Gateway
  let publicUrl = ''
  let port = 0
  let firstKey: SigningJwk
  let expiring: { token: string; at: number; firstStatus: number } | undefined

  const backendEnv = (keys: SigningJwk[]) => ({
    GOTRUE_JWT_KEYS: JSON.stringify(keys),
    GOTRUE_JWT_VALID_METHODS: 'ES256,HS256',
    GOTRUE_JWT_EXP: String(TOKEN_LIFETIME_SECONDS),
  })

  before(async () => {
    if (unavailable !== undefined) return
    const reservation = await reservePort()
    port = reservation.port
    publicUrl = `http://localhost:${port}/auth`
    firstKey = generateSigningJwk()
    backend = await startSupabaseAuth({ publicUrl, database: 'authgate_e2e_protect', extraEnv: backendEnv([firstKey]) })
    await reservation.release()
    gateway = await startGateway(backend, {
      port,
      prefix: '/auth',
      beforeListen: async (app) => {
        await app.register(authgateProtect, {
          backendUrl: new URL(backend.url),
          issuer: publicUrl,
          clockToleranceSeconds: 0,
          jwksCooldownMs: 500,
          sessionCheck: { ttlMs: 200 },
        })
        const me = async (request: { user: unknown }) => request.user
        app.route(defineRoute({ method: 'GET', url: '/api/me', tags: ['App'], auth: 'required', handler: me }))
        app.route(defineRoute({ method: 'GET', url: '/api/live', tags: ['App'], auth: { session: true }, handler: me }))
        app.route(defineRoute({ method: 'GET', url: '/api/mfa', tags: ['App'], auth: { aal: 'aal2' }, handler: me }))
      },
    })
    const { token } = await signedIn('expired@example.com')
    expiring = { token, at: Date.now(), firstStatus: await status('/api/me', token) }
  })

  after(async () => {
    try {
      await gateway?.close()
    } finally {
      await backend?.stop()
    }
  })

  function client(): GoTrueClient {
    return new GoTrueClient({
      url: `${gateway.url}/auth`,
      persistSession: false,
      autoRefreshToken: false,
      detectSessionInUrl: false,
    })
  }

  async function signedIn(email: string): Promise<{ auth: GoTrueClient; token: string }> {
    const auth = client()
    const signIn = await auth.signInWithPassword({ email, password: PASSWORD })
    if (signIn.error?.code !== 'invalid_credentials') {
      assert.equal(signIn.error, null)
      return { auth, token: signIn.data.session!.access_token }
    }
    const { data, error } = await auth.signUp({ email, password: PASSWORD })
    assert.equal(error, null)
    assert.ok(data.session)
    return { auth, token: data.session.access_token }
  }

  const call = (path: string, token?: string) =>
    fetch(`${gateway.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} })

  async function status(path: string, token: string): Promise<number> {
    const res = await call(path, token)
    await res.body?.cancel()
    return res.status
  }

  it('a valid token passes; request.user has the claims Supabase Auth wrote', needsBackend, async () => {
    const { token } = await signedIn('valid@example.com')
    const res = await call('/api/me', token)
    assert.equal(res.status, 200, res.headers.get('www-authenticate') ?? '')
    const user = (await res.json()) as Record<string, unknown>
    assert.equal(user.email, 'valid@example.com')
    assert.equal((user.claims as { aud: string }).aud, 'authenticated')
    assert.equal((user.claims as { iss: string }).iss, publicUrl)
    assert.equal(user.aal, 'aal1')
    assert.equal(user.is_anonymous, false)
    assert.match(String(user.session_id), /^[0-9a-f-]{36}$/)
    assert.deepEqual(
      (user.amr as { method: string }[]).map((a) => a.method),
      ['password'],
    )
  })

  it('no token: 401 with the RFC 9728 pointer, and the metadata names the issuer', needsBackend, async () => {
    const res = await call('/api/me')
    assert.equal(res.status, 401)
    assert.equal(res.headers.get('x-sb-error-code'), 'no_authorization')
    const challenge = res.headers.get('www-authenticate')!
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1]!
    assert.equal(metadataUrl, `http://localhost:${port}/.well-known/oauth-protected-resource`)
    const metadata = (await (await fetch(metadataUrl.replace('localhost', '127.0.0.1'))).json()) as {
      authorization_servers: string[]
    }
    assert.deepEqual(metadata.authorization_servers, [publicUrl])
    // That authorization server is Supabase Auth through authgate, and says so.
    const as = (await (await fetch(`${gateway.url}/auth/.well-known/oauth-authorization-server`)).json()) as {
      issuer: string
    }
    assert.equal(as.issuer, publicUrl)
  })

  it(
    'a signed-out session’s token passes locally until expiry, but not where the session is checked',
    needsBackend,
    async () => {
      const { auth, token } = await signedIn('signout@example.com')
      assert.equal(await status('/api/live', token), 200)
      const { error } = await auth.signOut()
      assert.equal(error, null)
      await sleep(250) // the session check's cached answer (200 ms) runs out
      assert.equal(await status('/api/me', token), 200, 'local verification cannot know about the sign-out')
      const res = await call('/api/live', token)
      assert.equal(res.status, 401)
      assert.equal(res.headers.get('x-sb-error-code'), 'session_not_found')
      assert.match(res.headers.get('www-authenticate')!, /error="invalid_token".*session_not_found/)
    },
  )

  it('an expired token: 401 bad_jwt', needsBackend, async () => {
    const { token, at, firstStatus } = expiring!
    assert.equal(firstStatus, 200)
    // `exp` is whole seconds after the sign-in answered; one more second and it has passed.
    await sleep(Math.max(0, at + (TOKEN_LIFETIME_SECONDS + 1) * 1000 - Date.now()))
    const res = await call('/api/me', token)
    assert.equal(res.status, 401)
    assert.equal(res.headers.get('x-sb-error-code'), 'bad_jwt')
    assert.match(
      res.headers.get('www-authenticate')!,
      /error="invalid_token", error_description="the access token has expired"/,
    )
  })

  it('a tampered token (aal raised to aal2 in the payload): 401', needsBackend, async () => {
    const { token } = await signedIn('tamper@example.com')
    const [header, payload, signature] = token.split('.')
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>
    const forged = Buffer.from(JSON.stringify({ ...claims, aal: 'aal2' })).toString('base64url')
    const res = await call('/api/mfa', `${header}.${forged}.${signature}`)
    assert.equal(res.status, 401)
    assert.match(res.headers.get('www-authenticate')!, /signature is invalid/)
  })

  it('a foreign token (same claims, same kid, another key): 401', needsBackend, async () => {
    const { token } = await signedIn('foreign@example.com')
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>
    const { key_ops: _ops, ...foreign } = generateSigningJwk()
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: firstKey.kid, typ: 'JWT' })
      .sign(await importJWK(foreign, 'ES256'))
    assert.equal(await status('/api/me', forged), 401)
  })

  it('an aal1 token on an aal2 route: 401 insufficient_aal (RFC 9470)', needsBackend, async () => {
    const { token } = await signedIn('mfa@example.com')
    const res = await call('/api/mfa', token)
    assert.equal(res.status, 401)
    assert.equal(res.headers.get('x-sb-error-code'), 'insufficient_aal')
    assert.match(res.headers.get('www-authenticate')!, /error="insufficient_user_authentication"/)
    assert.match(res.headers.get('www-authenticate')!, /acr_values="aal2 aal3"/)
  })

  it('the document shows what each route checks', needsBackend, async () => {
    const doc = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security: unknown; responses: Record<string, unknown> }>>
    }
    assert.deepEqual(Object.keys(doc.paths['/api/me']!.get!.responses), ['200', '400', '401', '500'])
    assert.deepEqual(Object.keys(doc.paths['/api/mfa']!.get!.responses), ['200', '400', '401', '500'])
    assert.deepEqual(doc.paths['/.well-known/oauth-protected-resource']!.get!.security, [])
  })

  it('a key rotation on the backend is picked up on the first token with the new key', needsBackend, async () => {
    const before = await signedIn('rotate-before@example.com')
    assert.equal(await status('/api/me', before.token), 200)

    // Restart with a new signing key; the old one stays published for verification only.
    const secondKey = generateSigningJwk()
    await backend.stop()
    const oldForVerify = { ...firstKey, key_ops: ['verify'] }
    backend = await startSupabaseAuth({
      publicUrl,
      port: backend.port,
      database: 'authgate_e2e_protect',
      extraEnv: backendEnv([secondKey, oldForVerify as unknown as SigningJwk]),
    })
    await sleep(600) // past the key set cooldown

    const after = await signedIn('rotate-after@example.com')
    const kid = (JSON.parse(Buffer.from(after.token.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid
    assert.equal(kid, secondKey.kid, 'Supabase Auth signs with the new key')
    assert.equal(await status('/api/me', after.token), 200)
    assert.equal(await status('/api/me', before.token), 200, 'tokens of the old key stay valid until expiry')
  })
})
