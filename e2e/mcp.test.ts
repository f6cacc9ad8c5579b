import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { GoTrueClient } from '@supabase/auth-js'
import * as oauth from 'oauth4webapi'
import { decodeJws } from './support/jws.ts'
import { startMcpStack, type McpStack } from './support/mcp-stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

const DATABASE = 'authgate_e2e_mcp'
const REDIRECT_URI = 'http://localhost:3000/mcp/callback'
const EMAIL = 'mcp-user@example.com'
const PASSWORD = 'correct-horse-battery-3'
const insecure = { [oauth.allowInsecureRequests]: true }
/** Set to print the exchanges, as docs/mcp.md shows them. */
const TRANSCRIPT = process.env.AUTHGATE_E2E_TRANSCRIPT === '1'

/**
 * An MCP server behind authgate, its client played by oauth4webapi doing what the MCP SDK does:
 * a 401 names the resource metadata, which names the authorization server; the client registers,
 * authorizes with `resource`, checks `iss`, and calls the server with a token for it alone.
 */
describe('an MCP server behind authgate and Supabase Auth (oauth4webapi as the MCP client)', () => {
  let stack: McpStack
  let publicOrigin = ''
  let publicUrl = ''
  let resource = ''
  let as: oauth.AuthorizationServer
  let client: oauth.Client
  let sessionToken = ''
  let user: GoTrueClient
  let tokens: oauth.TokenEndpointResponse

  const viaGateway: typeof fetch = (input, init) => stack.fetch(input, init)
  const options = { ...insecure, [oauth.customFetch]: viaGateway }

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startMcpStack(DATABASE, { email: EMAIL, password: PASSWORD })
    ;({ publicOrigin, publicUrl, resource, user, sessionToken } = stack)
  })

  after(async () => {
    if (TRANSCRIPT && stack) console.log(stack.lines.join('\n'))
    await stack?.stop()
  })

  const mcpCall = (token: string | undefined, path = '/mcp') =>
    viaGateway(`${publicOrigin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    })

  it(
    '401 without a token names the resource metadata, which names the resource and the issuer',
    needsBackend,
    async () => {
      const response = await mcpCall(undefined)
      assert.equal(response.status, 401)
      await response.body?.cancel()
      const challenge = response.headers.get('www-authenticate') ?? ''
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1]
      assert.equal(metadataUrl, `${publicOrigin}/.well-known/oauth-protected-resource/mcp`)

      const metadata = (await (await viaGateway(metadataUrl!)).json()) as {
        resource: string
        authorization_servers: string[]
      }
      // The MCP SDK accepts metadata whose resource is the URL it connected to (or a prefix of it).
      assert.equal(metadata.resource, resource)
      assert.deepEqual(metadata.authorization_servers, [publicUrl])
    },
  )

  it('discovers the authorization server, which says authorization responses carry iss', needsBackend, async () => {
    const issuer = new URL(publicUrl)
    as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { ...options, algorithm: 'oauth2' }),
    )
    assert.equal(as.authorization_response_iss_parameter_supported, true)
  })

  it('registers a public client (PKCE, no secret)', needsBackend, async () => {
    const response = await oauth.dynamicClientRegistrationRequest(
      as,
      { redirect_uris: [REDIRECT_URI], client_name: 'MCP client', token_endpoint_auth_method: 'none' },
      options,
    )
    client = await oauth.processDynamicClientRegistrationResponse(response)
    assert.equal(client.token_endpoint_auth_method, 'none')
  })

  it('an authorization the backend refuses comes back to the client with iss (RFC 9207)', needsBackend, async () => {
    const url = new URL(as.authorization_endpoint!)
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'todos:read',
      state: 'st',
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
    }).toString()
    const response = await viaGateway(url, { redirect: 'manual' })
    assert.equal(response.status, 302)
    const location = new URL(response.headers.get('location')!)
    assert.equal(location.searchParams.get('error'), 'invalid_request')
    assert.equal(location.searchParams.get('iss'), publicUrl)
    // oauth4webapi, told by the metadata that iss is sent, checks it.
    assert.throws(() => oauth.validateAuthResponse(as, client, location, 'st'), oauth.AuthorizationResponseError)
  })

  it(
    'authorizes for the resource, the user consents, and the redirect carries a code and iss',
    needsBackend,
    async () => {
      const codeVerifier = oauth.generateRandomCodeVerifier()
      const state = oauth.generateRandomState()
      const url = new URL(as.authorization_endpoint!)
      url.search = new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        response_type: 'code',
        scope: 'openid email',
        state,
        resource,
        code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      }).toString()
      const response = await viaGateway(url, { redirect: 'manual' })
      assert.equal(response.status, 302)
      const consent = new URL(response.headers.get('location')!)
      assert.equal(consent.searchParams.get('iss'), null, 'the consent page is not an authorization response')
      const authorizationId = consent.searchParams.get('authorization_id')!

      assert.equal((await user.signInWithPassword({ email: EMAIL, password: PASSWORD })).error, null)
      // The consent page shows the request first (which binds it to the signed-in user).
      const details = await user.oauth.getAuthorizationDetails(authorizationId)
      assert.equal(details.error, null)
      const { data, error } = await user.oauth.approveAuthorization(authorizationId, { skipBrowserRedirect: true })
      assert.equal(error, null)
      const callback = new URL(data!.redirect_url)
      assert.equal(callback.searchParams.get('iss'), publicUrl)
      stack.lines.push(
        `consent approved -> ${callback.origin}${callback.pathname}?code=…&state=…&iss=${callback.searchParams.get('iss')}`,
      )

      const params = oauth.validateAuthResponse(as, client, callback, state)
      const tokenResponse = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.None(),
        params,
        REDIRECT_URI,
        codeVerifier,
        { ...options, additionalParameters: { resource } },
      )
      tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenResponse)
      const claims = decodeJws(tokens.access_token).payload
      assert.equal(claims.aud, resource, 'the access-token hook set the audience')
      assert.equal(claims.client_id, client.client_id)
      assert.equal(claims.scope, 'openid email todos:read')
    },
  )

  it('the MCP server accepts the token for it, and nothing else', needsBackend, async () => {
    const ok = await mcpCall(tokens.access_token)
    assert.equal(ok.status, 200)
    assert.deepEqual(await ok.json(), { sub: decodeJws(sessionToken).payload.sub, client_id: client.client_id })
    const scoped = await mcpCall(tokens.access_token, '/mcp/todos')
    assert.equal(scoped.status, 200)
    await scoped.body?.cancel()

    // The user's own supabase-js session token: another audience.
    const session = await mcpCall(sessionToken)
    assert.equal(session.status, 401)
    await session.body?.cancel()
    assert.match(session.headers.get('www-authenticate') ?? '', /error="invalid_token".*another audience/)
    // And the MCP token is not a token for the application's other routes.
    const other = await viaGateway(`${publicOrigin}/api/me`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    })
    assert.equal(other.status, 401)
    await other.body?.cancel()
  })

  it('refreshes; a refresh token the backend does not know is invalid_grant', needsBackend, async () => {
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, options),
    )
    assert.equal(decodeJws(refreshed.access_token).payload.aud, resource)
    tokens = refreshed

    const unknown = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), 'not-a-refresh-token', options)
    assert.equal(unknown.status, 400)
    await assert.rejects(
      oauth.processRefreshTokenResponse(as, client, unknown),
      (err: unknown) => err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant',
    )
    // Supabase Auth itself answers in its own shape.
    const straight = await fetch(`${stack.backend.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: 'not-a-refresh-token',
        client_id: client.client_id,
      }),
    })
    assert.equal(straight.status, 400)
    assert.equal(((await straight.json()) as { error_code: string }).error_code, 'refresh_token_not_found')
  })

  it('a client the backend does not know is invalid_client: 401 with a Basic challenge', needsBackend, async () => {
    const stranger = { client_id: '5b0c7d0e-2f4a-4b8e-9d6c-1a2b3c4d5e6f' }
    const response = await oauth.refreshTokenGrantRequest(
      as,
      stranger,
      oauth.ClientSecretBasic('nope'),
      tokens.refresh_token!,
      options,
    )
    assert.equal(response.status, 401)
    assert.deepEqual(await response.clone().json(), {
      error: 'invalid_client',
      error_description: 'Invalid client credentials',
    })
    // RFC 6749 §5.2: credentials sent in the Authorization header are refused with a challenge.
    await assert.rejects(
      oauth.processRefreshTokenResponse(as, stranger, response),
      (err: unknown) => err instanceof oauth.WWWAuthenticateChallengeError && err.cause[0]?.scheme === 'basic',
    )
  })

  it('once the user revokes the grant, the refresh token is invalid_grant', needsBackend, async () => {
    assert.equal((await user.oauth.revokeGrant({ clientId: client.client_id })).error, null)
    const response = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, options)
    assert.equal(response.status, 400)
    await assert.rejects(
      oauth.processRefreshTokenResponse(as, client, response),
      (err: unknown) => err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant',
    )
  })
})
