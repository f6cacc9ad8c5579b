import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as oauth from 'oauth4webapi'
import { decodeJws, verifyJwsWithJwks } from './support/jws.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'
import { OAUTH_CONSENT_PATH } from './support/supabase-auth-env.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

const REDIRECT_URI = 'http://localhost:3000/oauth/callback'
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
  let userToken = ''
  let userId = ''
  const codeVerifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const nonce = oauth.generateRandomNonce()
  let authorizationId = ''
  let callbackUrl: URL
  let tokens: oauth.TokenEndpointResponse

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_oauth' })
    issuer = new URL(stack.publicUrl)
    const response = await fetch(`${stack.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'oauth-user@example.com', password: 'correct-horse-battery-2', data: { name: 'Olivia' } }),
    })
    const session = (await response.json()) as { access_token: string; user: { id: string } }
    userToken = session.access_token
    userId = session.user.id
  })

  after(async () => {
    await stack?.stop()
  })

  it('discovers the server at /.well-known/oauth-authorization-server', needsBackend, async () => {
    const response = await fetch(`${stack.url}/auth/.well-known/oauth-authorization-server`)
    as = await oauth.processDiscoveryResponse(issuer, response)
    assert.equal(as.issuer, stack.publicUrl)
    assert.equal(as.token_endpoint, `${stack.publicUrl}/oauth/token`)
    assert.equal(as.registration_endpoint, `${stack.publicUrl}/oauth/clients/register`)
    assert.ok(as.code_challenge_methods_supported?.includes('S256'))

    // The OIDC twin (what oauth4webapi's default discovery fetches) describes the same server.
    const oidc = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure))
    assert.deepEqual(oidc, as)
  })

  it('has no RFC 8414 path-inserted metadata URL for an issuer with a path', needsBackend, async () => {
    // oauth4webapi's "oauth2" discovery inserts the well-known segment before the issuer's path;
    // Supabase Auth only serves it appended, so authgate (which mounts what the backend has) 404s.
    const response = await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' })
    assert.equal(new URL(response.url).pathname, '/.well-known/oauth-authorization-server/auth')
    assert.equal(response.status, 404)
    await response.body?.cancel()
  })

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
    const registered = (await response.clone().json()) as Record<string, unknown>
    // RFC 7591 §3.2.1 requires client_secret_expires_at with a secret; Supabase Auth omits it, so
    // oauth4webapi's strict response processing refuses the registration (see docs/e2e.md).
    assert.equal(typeof registered.client_secret, 'string')
    assert.equal('client_secret_expires_at' in registered, false)
    await assert.rejects(oauth.processDynamicClientRegistrationResponse(response), /client_secret_expires_at/)

    assert.equal(registered.token_endpoint_auth_method, 'client_secret_basic')
    assert.deepEqual(registered.redirect_uris, [REDIRECT_URI])
    clientSecret = registered.client_secret as string
    client = { client_id: registered.client_id as string, token_endpoint_auth_method: 'client_secret_basic' }
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

  it('takes the signed-in user\'s consent (backend authorization API, not mounted on authgate)', needsBackend, async () => {
    const notMounted = await fetch(`${stack.url}/auth/oauth/authorizations/${authorizationId}`, {
      headers: { authorization: `Bearer ${userToken}` },
    })
    await notMounted.body?.cancel()
    assert.equal(notMounted.status, 404)

    const headers = { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' }
    const details = await fetch(`${stack.backend.url}/oauth/authorizations/${authorizationId}`, { headers })
    assert.equal(details.status, 200)
    const request = (await details.json()) as { client: { id: string }; user: { id: string }; scope: string; redirect_uri: string }
    assert.equal(request.client.id, client.client_id)
    assert.equal(request.user.id, userId)
    assert.equal(request.redirect_uri, REDIRECT_URI)
    assert.deepEqual(request.scope.split(' ').sort(), ['email', 'openid', 'profile'])

    const consent = await fetch(`${stack.backend.url}/oauth/authorizations/${authorizationId}/consent`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ action: 'approve' }),
    })
    assert.equal(consent.status, 200)
    const { redirect_url: redirectUrl } = (await consent.json()) as { redirect_url: string }
    callbackUrl = new URL(redirectUrl)
    assert.equal(callbackUrl.origin + callbackUrl.pathname, REDIRECT_URI)
  })

  it('exchanges the code at /oauth/token (form, client_secret_basic) and gets a signed id_token', needsBackend, async () => {
    const params = oauth.validateAuthResponse(as, client, callbackUrl, state)
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      basicWithoutFormEncoding(clientSecret),
      params,
      REDIRECT_URI,
      codeVerifier,
      { ...insecure, [oauth.customFetch]: viaGateway(stack) },
    )
    tokens = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce, requireIdToken: true })
    assert.equal(tokens.token_type, 'bearer')
    assert.ok(tokens.refresh_token)
    const claims = oauth.getValidatedIdTokenClaims(tokens)
    assert.ok(claims)
    assert.equal(claims.sub, userId)
    assert.equal(claims.iss, stack.publicUrl)
    assert.equal(claims.aud, client.client_id)
  })

  it('rejects oauth4webapi\'s RFC 6749 form-encoded Basic credentials (Supabase Auth does not decode them)', needsBackend, async () => {
    // Client authentication runs before the grant is looked at, so a dummy refresh token will do.
    const response = await oauth.refreshTokenGrantRequest(as, client, oauth.ClientSecretBasic(clientSecret), 'not-a-real-refresh-token', {
      ...insecure,
      [oauth.customFetch]: viaGateway(stack),
    })
    // The client id is a UUID: its '-' become %2D under RFC 6749 §2.3.1's form encoding.
    const sentBasic = Buffer.from(lastAuthorization.replace(/^Basic /, ''), 'base64').toString('utf8')
    assert.ok(sentBasic.startsWith(client.client_id.replaceAll('-', '%2D') + ':'))
    assert.equal(response.status, 400)
    const body = (await response.json()) as { error_code?: string }
    assert.equal(body.error_code, 'invalid_credentials')
  })

  it('answers /oauth/userinfo with the granted claims', needsBackend, async () => {
    const response = await oauth.userInfoRequest(as, client, tokens.access_token, { ...insecure, [oauth.customFetch]: viaGateway(stack) })
    const info = await oauth.processUserInfoResponse(as, client, userId, response)
    assert.equal(info.sub, userId)
    assert.equal(info.email, 'oauth-user@example.com')
    assert.equal(info.email_verified, true)
    assert.equal(info.name, 'Olivia')
  })

  it('publishes the signing key at /.well-known/jwks.json and both tokens verify against it', needsBackend, async () => {
    const response = await fetch(`${stack.url}/auth/.well-known/jwks.json`)
    assert.equal(response.status, 200)
    const jwks = (await response.json()) as { keys: Array<{ kid?: string; alg?: string; d?: string }> }
    assert.equal(jwks.keys.some((key) => key.d !== undefined), false, 'private key material published')

    const idClaims = verifyJwsWithJwks(tokens.id_token ?? '', jwks)
    assert.equal(idClaims.nonce, nonce)
    const accessClaims = verifyJwsWithJwks(tokens.access_token, jwks)
    assert.equal(accessClaims.sub, userId)
    assert.equal(accessClaims.client_id, client.client_id)
    assert.equal(decodeJws(tokens.access_token).header.kid, stack.backend.signingJwk.kid)

    const tampered = tokens.access_token.replace(/\.([^.]+)\./, (_, payload: string) => `.${payload.slice(0, -2)}AA.`)
    assert.throws(() => verifyJwsWithJwks(tampered, jwks))
  })

  it('refreshes the OAuth session at /oauth/token', needsBackend, async () => {
    const response = await oauth.refreshTokenGrantRequest(as, client, basicWithoutFormEncoding(clientSecret), tokens.refresh_token ?? '', {
      ...insecure,
      [oauth.customFetch]: viaGateway(stack),
    })
    const refreshed = await oauth.processRefreshTokenResponse(as, client, response)
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token)
    assert.equal(decodeJws(refreshed.access_token).payload.sub, userId)
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
    assert.equal(url.origin, stack.publicOrigin, 'a request left authgate\'s origin')
    const headers = new Headers(init?.headers)
    lastAuthorization = headers.get('authorization') ?? ''
    return fetch(`${stack.url}${url.pathname}${url.search}`, init)
  }
}

/** HTTP Basic with the raw id and secret, as Supabase Auth expects (and most clients send). */
function basicWithoutFormEncoding(secret: string): oauth.ClientAuth {
  return (_as, client, _body, headers) => {
    headers.set('authorization', `Basic ${Buffer.from(`${client.client_id}:${secret}`).toString('base64')}`)
  }
}
