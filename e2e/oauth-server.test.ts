import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { GoTrueClient } from '@supabase/auth-js'
import * as oauth from 'oauth4webapi'
import { decodeJws, verifyJwsWithJwks } from './support/jws.ts'
import { recordingFetch } from './support/recording-fetch.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'
import { OAUTH_CONSENT_PATH } from '../scripts/supabase-auth/env.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

const REDIRECT_URI = 'http://localhost:3000/oauth/callback'
const USER_EMAIL = 'oauth-user@example.com'
const USER_PASSWORD = 'correct-horse-battery-2'
const insecure = { [oauth.allowInsecureRequests]: true }

/**
 * The OAuth 2.1 server of Supabase Auth used by a standard relying party (oauth4webapi) through
 * authgate. Steps share state, so they run in order and each builds on the previous one.
 */
describe('OAuth 2.1 server through authgate (oauth4webapi)', () => {
  let stack: Stack
  let issuer: URL
  let as: oauth.AuthorizationServer
  let client: oauth.Client
  let clientSecret = ''
  let userId = ''
  const codeVerifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const nonce = oauth.generateRandomNonce()
  let authorizationId = ''
  let callbackUrl: URL
  let tokens: oauth.TokenEndpointResponse
  let latestRefreshToken = ''
  let consentClient: GoTrueClient | undefined

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_oauth' })
    issuer = new URL(stack.publicUrl)
    const response = await fetch(`${stack.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        email: USER_EMAIL,
        password: USER_PASSWORD,
        data: { name: 'Olivia' },
      }),
    })
    const session = (await response.json()) as { user: { id: string } }
    userId = session.user.id
  })

  after(async () => {
    await stack?.stop()
  })

  it(
    'discovers the server with RFC 8414 path insertion (oauth4webapi "oauth2"), at the origin root',
    needsBackend,
    async () => {
      // Issuer http://localhost:<port>/auth → metadata at /.well-known/oauth-authorization-server/auth.
      const response = await oauth.discoveryRequest(issuer, {
        ...insecure,
        algorithm: 'oauth2',
        [oauth.customFetch]: viaGateway(stack),
      })
      assert.equal(new URL(response.url).pathname, '/.well-known/oauth-authorization-server/auth')
      as = await oauth.processDiscoveryResponse(issuer, response)
      assert.equal(as.issuer, stack.publicUrl)
      assert.equal(as.token_endpoint, `${stack.publicUrl}/oauth/token`)
      assert.equal(as.registration_endpoint, `${stack.publicUrl}/oauth/clients/register`)
      assert.ok(as.code_challenge_methods_supported?.includes('S256'))

      // The same document under the prefix, and the OIDC twins (appended and path-inserted).
      const appended = await fetch(`${stack.url}/auth/.well-known/oauth-authorization-server`)
      assert.deepEqual(await oauth.processDiscoveryResponse(issuer, appended), as)
      const oidc = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure))
      assert.deepEqual(oidc, as)
      const insertedOidc = await fetch(`${stack.url}/.well-known/openid-configuration/auth`)
      assert.deepEqual(await oauth.processDiscoveryResponse(issuer, insertedOidc), as)
    },
  )

  it('registers a confidential client dynamically (201)', needsBackend, async () => {
    const response = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        redirect_uris: [REDIRECT_URI],
        client_name: 'authgate e2e',
        client_type: 'confidential',
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: ['authorization_code', 'refresh_token'],
      },
      insecure,
    )
    assert.equal(response.status, 201)
    // RFC 7591 §3.2.1 requires client_secret_expires_at with a secret; Supabase Auth leaves it out
    // and authgate adds it (docs/decisions.md, D28), so oauth4webapi's strict processing accepts it.
    const registered = await oauth.processDynamicClientRegistrationResponse(response)
    assert.equal(typeof registered.client_secret, 'string')
    assert.equal(registered.client_secret_expires_at, 0)
    assert.equal(registered.token_endpoint_auth_method, 'client_secret_basic')
    assert.deepEqual(registered.redirect_uris, [REDIRECT_URI])
    clientSecret = registered.client_secret as string
    client = { client_id: registered.client_id, token_endpoint_auth_method: 'client_secret_basic' }
  })

  it('Supabase Auth itself leaves client_secret_expires_at out of the registration answer', needsBackend, async () => {
    const response = await fetch(`${stack.backend.url}/oauth/clients/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'client_secret_basic' }),
    })
    assert.equal(response.status, 201)
    await assert.rejects(oauth.processDynamicClientRegistrationResponse(response), /client_secret_expires_at/)
  })

  it('redirects GET /oauth/authorize with PKCE to the consent page', needsBackend, async () => {
    const url = new URL(as.authorization_endpoint ?? '')
    url.searchParams.set('client_id', client.client_id)
    url.searchParams.set('redirect_uri', REDIRECT_URI)
    url.searchParams.set('response_type', 'code')
    url.searchParams.set('scope', 'openid email profile')
    url.searchParams.set('state', state)
    url.searchParams.set('nonce', nonce)
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier))
    url.searchParams.set('code_challenge_method', 'S256')
    assert.equal(url.origin + url.pathname, `${stack.publicOrigin}/auth/oauth/authorize`)

    const response = await fetch(`${stack.url}${url.pathname}${url.search}`, { redirect: 'manual' })
    await response.body?.cancel()
    assert.equal(response.status, 302)
    const location = new URL(response.headers.get('location') ?? '')
    assert.equal(location.origin + location.pathname, stack.publicOrigin + OAUTH_CONSENT_PATH)
    authorizationId = location.searchParams.get('authorization_id') ?? ''
    assert.match(authorizationId, /^[A-Za-z0-9]{20,}$/)
  })

  it(
    'refuses an empty client_id or redirect_uri with 400, as the document says (minLength 1)',
    needsBackend,
    async () => {
      const doc = (await (await fetch(`${stack.url}/openapi.json`)).json()) as {
        paths: Record<string, { get: { parameters: Array<{ name: string; schema: { minLength?: number } }> } }>
      }
      const params = doc.paths['/auth/oauth/authorize']!.get.parameters
      for (const [name, message] of [
        ['client_id', 'client_id is required'],
        ['redirect_uri', 'redirect_uri is required'],
      ] as const) {
        assert.equal(params.find((p) => p.name === name)?.schema.minLength, 1, name)
        const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: REDIRECT_URI })
        query.set(name, '')
        const through = await fetch(`${stack.url}/auth/oauth/authorize?${query}`, { redirect: 'manual' })
        const straight = await fetch(`${stack.backend.url}/oauth/authorize?${query}`, { redirect: 'manual' })
        assert.equal(through.status, 400)
        assert.equal(straight.status, 400)
        const body = (await through.json()) as { msg: string }
        assert.equal(body.msg, message)
        assert.deepEqual(body, await straight.json())
      }
    },
  )

  it(
    "shows the request and takes the user's consent through authgate (supabase-js auth.oauth)",
    needsBackend,
    async () => {
      const recorder = recordingFetch()
      const user = new GoTrueClient({
        url: `${stack.url}/auth`,
        persistSession: false,
        autoRefreshToken: false,
        detectSessionInUrl: false,
        fetch: recorder.fetch,
      })
      assert.equal((await user.signInWithPassword({ email: USER_EMAIL, password: USER_PASSWORD })).error, null)
      consentClient = user

      const { data: details, error } = await user.oauth.getAuthorizationDetails(authorizationId)
      assert.equal(error, null)
      assert.ok(details && 'client' in details, 'not yet consented: the details come back')
      assert.equal(details.client.id, client.client_id)
      assert.equal(details.client.name, 'authgate e2e')
      assert.equal(details.user.id, userId)
      assert.equal(details.redirect_uri, REDIRECT_URI)
      assert.deepEqual(details.scope.split(' ').sort(), ['email', 'openid', 'profile'])
      assert.deepEqual(recorder.last(), {
        method: 'GET',
        target: `/auth/oauth/authorizations/${authorizationId}`,
        status: 200,
      })

      const { data: approved, error: approveError } = await user.oauth.approveAuthorization(authorizationId, {
        skipBrowserRedirect: true,
      })
      assert.equal(approveError, null)
      assert.deepEqual(recorder.last(), {
        method: 'POST',
        target: `/auth/oauth/authorizations/${authorizationId}/consent`,
        status: 200,
      })
      callbackUrl = new URL(approved?.redirect_url ?? '')
      assert.equal(callbackUrl.origin + callbackUrl.pathname, REDIRECT_URI)
      assert.equal(callbackUrl.searchParams.get('state'), state)
    },
  )

  it('refuses a consent without the user token, as Supabase Auth does', needsBackend, async () => {
    const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"action":"approve"}' }
    const through = await fetch(`${stack.url}/auth/oauth/authorizations/${authorizationId}/consent`, init)
    const straight = await fetch(`${stack.backend.url}/oauth/authorizations/${authorizationId}/consent`, init)
    assert.equal(through.status, 401)
    assert.equal(straight.status, 401)
    assert.deepEqual(await through.json(), await straight.json())
  })

  it(
    "exchanges the code at /oauth/token (form, oauth4webapi's ClientSecretBasic) and gets a signed id_token",
    needsBackend,
    async () => {
      const params = oauth.validateAuthResponse(as, client, callbackUrl, state)
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(clientSecret),
        params,
        REDIRECT_URI,
        codeVerifier,
        { ...insecure, [oauth.customFetch]: viaGateway(stack) },
      )
      tokens = await oauth.processAuthorizationCodeResponse(as, client, response, {
        expectedNonce: nonce,
        requireIdToken: true,
      })
      assert.equal(tokens.token_type, 'bearer')
      assert.ok(tokens.refresh_token)
      const claims = oauth.getValidatedIdTokenClaims(tokens)
      assert.ok(claims)
      assert.equal(claims.sub, userId)
      assert.equal(claims.iss, stack.publicUrl)
      assert.equal(claims.aud, client.client_id)
    },
  )

  it(
    "authenticates oauth4webapi's RFC 6749 form-encoded Basic credentials (authgate decodes them; docs/decisions.md, D27)",
    needsBackend,
    async () => {
      // Client authentication runs before the grant is looked at, so a dummy refresh token shows
      // which step refused: the credentials pass, the refresh token does not.
      const response = await oauth.refreshTokenGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(clientSecret),
        'not-a-real-refresh-token',
        {
          ...insecure,
          [oauth.customFetch]: viaGateway(stack),
        },
      )
      // The client id is a UUID: its '-' become %2D under RFC 6749 §2.3.1's form encoding.
      const sentBasic = Buffer.from(lastAuthorization.replace(/^Basic /, ''), 'base64').toString('utf8')
      assert.ok(sentBasic.startsWith(client.client_id.replaceAll('-', '%2D') + ':'))
      assert.equal(response.status, 400)
      // Supabase Auth's refresh_token_not_found, in RFC 6749 §5.2's words (docs/decisions.md, D82).
      const body = (await response.json()) as { error?: string }
      assert.equal(body.error, 'invalid_grant')
    },
  )

  it('answers /oauth/userinfo with the granted claims', needsBackend, async () => {
    const response = await oauth.userInfoRequest(as, client, tokens.access_token, {
      ...insecure,
      [oauth.customFetch]: viaGateway(stack),
    })
    const info = await oauth.processUserInfoResponse(as, client, userId, response)
    assert.equal(info.sub, userId)
    assert.equal(info.email, 'oauth-user@example.com')
    assert.equal(info.email_verified, true)
    assert.equal(info.name, 'Olivia')
  })

  it(
    'publishes the signing key at /.well-known/jwks.json and both tokens verify against it',
    needsBackend,
    async () => {
      const response = await fetch(`${stack.url}/auth/.well-known/jwks.json`)
      assert.equal(response.status, 200)
      const jwks = (await response.json()) as { keys: Array<{ kid?: string; alg?: string; d?: string }> }
      assert.equal(
        jwks.keys.some((key) => key.d !== undefined),
        false,
        'private key material published',
      )

      const idClaims = verifyJwsWithJwks(tokens.id_token ?? '', jwks)
      assert.equal(idClaims.nonce, nonce)
      const accessClaims = verifyJwsWithJwks(tokens.access_token, jwks)
      assert.equal(accessClaims.sub, userId)
      assert.equal(accessClaims.client_id, client.client_id)
      assert.equal(decodeJws(tokens.access_token).header.kid, stack.backend.signingJwk.kid)

      const tampered = tokens.access_token.replace(/\.([^.]+)\./, (_, payload: string) => `.${payload.slice(0, -2)}AA.`)
      assert.throws(() => verifyJwsWithJwks(tampered, jwks))
    },
  )

  it('refreshes the OAuth session at /oauth/token', needsBackend, async () => {
    const response = await oauth.refreshTokenGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(clientSecret),
      tokens.refresh_token ?? '',
      {
        ...insecure,
        [oauth.customFetch]: viaGateway(stack),
      },
    )
    const refreshed = await oauth.processRefreshTokenResponse(as, client, response)
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token)
    latestRefreshToken = refreshed.refresh_token ?? ''
    assert.equal(decodeJws(refreshed.access_token).payload.sub, userId)
  })

  it("lists the user's grant, revokes it, and the client's refresh token stops working", needsBackend, async () => {
    assert.ok(consentClient)
    const { data: grants, error } = await consentClient.oauth.listGrants()
    assert.equal(error, null)
    assert.deepEqual(
      grants?.map((g) => [g.client.id, [...g.scopes].sort()]),
      [[client.client_id, ['email', 'openid', 'profile']]],
    )

    const { error: revokeError } = await consentClient.oauth.revokeGrant({ clientId: client.client_id })
    assert.equal(revokeError, null)
    const { data: after } = await consentClient.oauth.listGrants()
    assert.deepEqual(after, [])

    const response = await oauth.refreshTokenGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(clientSecret),
      latestRefreshToken,
      { ...insecure, [oauth.customFetch]: viaGateway(stack) },
    )
    assert.equal(response.status, 400)
    await response.body?.cancel()
  })
})

let lastAuthorization = ''

/**
 * The endpoints in the metadata name the public origin (localhost); requests go to the same
 * authgate over 127.0.0.1 so that no IPv6 resolution of `localhost` is involved.
 */
function viaGateway(stack: Stack): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : input.toString())
    assert.equal(url.origin, stack.publicOrigin, "a request left authgate's origin")
    const headers = new Headers(init?.headers)
    lastAuthorization = headers.get('authorization') ?? ''
    return fetch(`${stack.url}${url.pathname}${url.search}`, init)
  }
}
