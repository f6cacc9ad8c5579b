import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { GoTrueClient } from '@supabase/auth-js'
import { decodeJws } from './support/jws.ts'
import { startMcpStack, type McpStack } from './support/mcp-stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

/** The parts of the MCP TypeScript SDK's client authorization (`client/auth.js`) this test drives. */
interface McpSdkAuth {
  auth(
    provider: MemoryProvider,
    options: { serverUrl: string; authorizationCode?: string; resourceMetadataUrl?: URL; fetchFn?: typeof fetch },
  ): Promise<'AUTHORIZED' | 'REDIRECT'>
  extractWWWAuthenticateParams(res: Response): { resourceMetadataUrl?: URL; scope?: string; error?: string }
}

// Not a dependency of the repository yet: the test runs where it is installed.
const SDK_MODULE = '@modelcontextprotocol/sdk/client/auth.js'
const sdk = await (import(SDK_MODULE) as Promise<McpSdkAuth>).catch(() => undefined)
const unavailable = (await backendUnavailableReason()) ?? (sdk ? undefined : 'needs @modelcontextprotocol/sdk')
const needs = { skip: unavailable }

const REDIRECT_URI = 'http://localhost:3000/mcp-sdk/callback'
const EMAIL = 'mcp-sdk-user@example.com'
const PASSWORD = 'correct-horse-battery-4'

interface Tokens {
  access_token: string
  refresh_token?: string
  [k: string]: unknown
}

/** An in-memory OAuthClientProvider: what an MCP client application keeps between steps. */
class MemoryProvider {
  client: Record<string, unknown> | undefined
  saved: Tokens | undefined
  verifier = ''
  authorizationUrl: URL | undefined
  readonly invalidated: string[] = []

  get redirectUrl(): string {
    return REDIRECT_URI
  }
  get clientMetadata() {
    return {
      redirect_uris: [REDIRECT_URI],
      client_name: 'MCP SDK client',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: Record<string, unknown>) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: Tokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
  invalidateCredentials(scope: string) {
    this.invalidated.push(scope)
    if (scope === 'tokens' || scope === 'all') this.saved = undefined
    if (scope === 'all') this.client = undefined
  }
}

/**
 * The MCP TypeScript SDK's own client authorization against authgate and the real Supabase Auth:
 * its discovery from the 401, its check of the resource metadata against the server URL, dynamic
 * registration, the authorization with `resource`, the code exchange, refreshing, and what it does
 * when a refresh token is refused.
 */
describe('the MCP TypeScript SDK authorizes against an MCP server behind authgate', () => {
  let stack: McpStack
  let user: GoTrueClient
  let resourceMetadataUrl: URL | undefined
  const provider = new MemoryProvider()

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startMcpStack('authgate_e2e_mcp_sdk', { email: EMAIL, password: PASSWORD })
    user = stack.user
  })
  after(async () => {
    await stack?.stop()
  })

  const mcpCall = (token?: string) =>
    stack.fetch(stack.resource, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    })

  it('reads the 401, discovers, registers and sends the user to authorize for the resource', needs, async () => {
    const refused = await mcpCall()
    assert.equal(refused.status, 401)
    await refused.body?.cancel()
    resourceMetadataUrl = sdk!.extractWWWAuthenticateParams(refused).resourceMetadataUrl
    assert.equal(String(resourceMetadataUrl), `${stack.publicOrigin}/.well-known/oauth-protected-resource/mcp`)

    const result = await sdk!.auth(provider, { serverUrl: stack.resource, resourceMetadataUrl, fetchFn: stack.fetch })
    assert.equal(result, 'REDIRECT')
    assert.match(String(provider.client?.client_id), /^[0-9a-f-]{36}$/)
    const url = provider.authorizationUrl!
    assert.equal(url.origin + url.pathname, `${stack.publicUrl}/oauth/authorize`)
    assert.equal(url.searchParams.get('resource'), stack.resource)
    assert.equal(url.searchParams.get('scope'), 'openid email', "the resource metadata's scopes")
  })

  it('after consent, exchanges the code; the token is for the MCP server', needs, async () => {
    const toConsent = await stack.fetch(provider.authorizationUrl!, { redirect: 'manual' })
    assert.equal(toConsent.status, 302)
    const authorizationId = new URL(toConsent.headers.get('location')!).searchParams.get('authorization_id')!
    assert.equal((await user.signInWithPassword({ email: EMAIL, password: PASSWORD })).error, null)
    assert.equal((await user.oauth.getAuthorizationDetails(authorizationId)).error, null)
    const { data, error } = await user.oauth.approveAuthorization(authorizationId, { skipBrowserRedirect: true })
    assert.equal(error, null)
    const callback = new URL(data!.redirect_url)
    assert.equal(callback.searchParams.get('iss'), stack.publicUrl)
    assert.equal(callback.searchParams.get('state'), provider.authorizationUrl!.searchParams.get('state'))

    const result = await sdk!.auth(provider, {
      serverUrl: stack.resource,
      authorizationCode: callback.searchParams.get('code')!,
      resourceMetadataUrl,
      fetchFn: stack.fetch,
    })
    assert.equal(result, 'AUTHORIZED')
    const token = provider.saved!.access_token
    assert.equal(decodeJws(token).payload.aud, stack.resource)
    const answer = await mcpCall(token)
    assert.equal(answer.status, 200)
    assert.equal(((await answer.json()) as { client_id: string }).client_id, provider.client?.client_id)
  })

  it('refreshes with the stored refresh token', needs, async () => {
    const before = provider.saved!.access_token
    assert.equal(await sdk!.auth(provider, { serverUrl: stack.resource, fetchFn: stack.fetch }), 'AUTHORIZED')
    assert.notEqual(provider.saved!.access_token, before)
    const answer = await mcpCall(provider.saved!.access_token)
    assert.equal(answer.status, 200)
    await answer.body?.cancel()
  })

  it('a refused refresh token (invalid_grant) is dropped and the user is asked again', needs, async () => {
    provider.saved = { ...provider.saved!, refresh_token: 'a-refresh-token-the-backend-never-issued' }
    provider.authorizationUrl = undefined
    const result = await sdk!.auth(provider, { serverUrl: stack.resource, fetchFn: stack.fetch })
    assert.equal(result, 'REDIRECT')
    assert.deepEqual(provider.invalidated, ['tokens'])
    assert.equal(provider.saved, undefined)
    assert.ok(provider.authorizationUrl, 'a new authorization was started')
  })
})
