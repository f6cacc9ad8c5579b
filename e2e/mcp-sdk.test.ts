import assert from 'node:assert/strict'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { localhostCertificate } from '../test/support/localhost-certificate.ts'
import type { GoTrueClient } from '@supabase/auth-js'
import { chromiumUnavailableReason, launchChromium } from './support/chromium.ts'
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

// ---------------------------------------------------------------------------------------------
// Client ID metadata documents and authgate's consent page, with the SDK's client and server.

/** The SDK's client, its Streamable HTTP transport and server parts this test drives. */
interface McpSdkParts {
  Client: new (info: { name: string; version: string }) => {
    connect(transport: unknown): Promise<void>
    callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<{
      content: Array<{ type: string; text?: string }>
    }>
    close(): Promise<void>
  }
  StreamableHTTPClientTransport: new (
    url: URL,
    options: { authProvider: unknown; fetch: typeof fetch },
  ) => { finishAuth(code: string): Promise<void> }
  McpServer: new (info: { name: string; version: string }) => {
    registerTool(
      name: string,
      config: { description: string },
      cb: () => Promise<{ content: Array<{ type: 'text'; text: string }> }>,
    ): unknown
    connect(transport: unknown): Promise<void>
    close(): Promise<void>
  }
  StreamableHTTPServerTransport: new (options: { sessionIdGenerator: undefined; enableJsonResponse: boolean }) => {
    handleRequest(req: unknown, res: unknown, body?: unknown): Promise<void>
    close(): Promise<void>
  }
  UnauthorizedError: new (...args: unknown[]) => Error
}

const sdkParts: McpSdkParts | undefined = await Promise.all(
  [
    '@modelcontextprotocol/sdk/client/index.js',
    '@modelcontextprotocol/sdk/client/streamableHttp.js',
    '@modelcontextprotocol/sdk/server/mcp.js',
    '@modelcontextprotocol/sdk/server/streamableHttp.js',
    '@modelcontextprotocol/sdk/client/auth.js',
  ].map((m) => import(m) as Promise<Record<string, unknown>>),
)
  .then((mods) => Object.assign({}, ...mods) as McpSdkParts)
  .catch(() => undefined)

const CIMD_EMAIL = 'mcp-cimd-user@example.com'
/** The client's redirect URI: the test's own server (below), where the browser lands after a decision. */
let CIMD_REDIRECT = ''

/**
 * The client application's side in the browser: its redirect URI (a page saying where the browser
 * landed), and another site's page whose form posts the query's fields to `target` on load.
 */
async function startClientSite() {
  const server = createHttpServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    if (url.pathname !== '/other-site')
      return void res.end(
        `<!doctype html><title>Client</title><p>Back at the client with ${url.search.replace(/[<&]/g, '')}</p>`,
      )
    const target = url.searchParams.get('target')!
    url.searchParams.delete('target')
    const inputs = [...url.searchParams].map(([k, v]) => `<input name="${k}" value="${v}">`).join('')
    res.end(
      `<!doctype html><form method="post" action="${target}">${inputs}</form><script>document.forms[0].submit()</script>`,
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const host = `localhost:${(server.address() as AddressInfo).port}`
  return {
    host,
    origin: `http://${host}`,
    /** The same server under another site's name (127.0.0.1, not localhost). */
    otherSite: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    redirect: `http://${host}/mcp-cimd/callback`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** The test's own https server of client ID metadata documents: path → document and Cache-Control. */
async function startDocumentServer(cert: { key: string; cert: string }) {
  const documents = new Map<string, { body: Record<string, unknown>; cacheControl: string }>()
  const fetches: string[] = []
  const server = createHttpsServer(cert, (req, res) => {
    fetches.push(req.url ?? '')
    const doc = documents.get(req.url ?? '')
    if (doc === undefined) return res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': doc.cacheControl })
    res.end(JSON.stringify(doc.body))
  })
  await new Promise<void>((resolve) => server.listen(0, resolve))
  const origin = `https://localhost:${(server.address() as AddressInfo).port}`
  return {
    origin,
    documents,
    fetches,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // authgate's fetcher keeps its connection alive: closed here, not waited for.
        server.closeAllConnections()
      }),
  }
}

/** A provider that names itself by its metadata document's URL. */
class DocumentProvider extends MemoryProvider {
  readonly clientMetadataUrl: string
  constructor(url: string) {
    super()
    this.clientMetadataUrl = url
  }
  override get redirectUrl(): string {
    return CIMD_REDIRECT
  }
}

const cimdUnavailable =
  unavailable ?? (sdkParts ? undefined : 'needs @modelcontextprotocol/sdk') ?? (await chromiumUnavailableReason())

/**
 * The SDK's MCP client names itself by a client ID metadata document the test serves over https;
 * authgate fetches it, registers one Supabase Auth client for it and translates the ids; the user
 * signs in and consents on authgate's own consent page in Chromium;
 * the client calls a tool on the SDK's MCP server, refreshes, and the tokens it holds are refused
 * where they were not issued for.
 */
describe(
  'an MCP client known by its metadata document, consenting on authgate’s page',
  { skip: cimdUnavailable },
  () => {
    let stack: McpStack
    let docs: Awaited<ReturnType<typeof startDocumentServer>>
    let callbacks: Awaited<ReturnType<typeof startClientSite>>
    let browser: Browser
    let docUrl: string
    let provider: DocumentProvider
    let callbackCode = ''
    let authorizationId = ''
    const parts = sdkParts!

    before(async () => {
      callbacks = await startClientSite()
      CIMD_REDIRECT = callbacks.redirect
      browser = await launchChromium()
      const cert = localhostCertificate()
      docs = await startDocumentServer(cert)
      docUrl = `${docs.origin}/mcp-client.json`
      docs.documents.set('/mcp-client.json', {
        cacheControl: 'max-age=300',
        body: {
          client_id: docUrl,
          client_name: 'Todo MCP client',
          redirect_uris: [CIMD_REDIRECT],
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
        },
      })
      provider = new DocumentProvider(docUrl)
      stack = await startMcpStack(
        'authgate_e2e_mcp_cimd',
        { email: CIMD_EMAIL, password: PASSWORD },
        {
          // The test's own document server is on loopback with its own CA: the documented escape.
          clientMetadata: { origins: [docs.origin], privateOrigins: [docs.origin], ca: cert.cert },
          consentPage: { path: '/oauth/consent' },
          sdkServer: async (request, reply, user) => {
            const server = new parts.McpServer({ name: 'todo', version: '1.0.0' })
            server.registerTool('whoami', { description: 'who the token is for' }, async () => ({
              content: [{ type: 'text', text: JSON.stringify(user) }],
            }))
            const transport = new parts.StreamableHTTPServerTransport({
              sessionIdGenerator: undefined,
              enableJsonResponse: true,
            })
            reply.hijack()
            // Stateless: one server and transport per request, closed when the answer is over (a
            // request the client abandons ends in an abort, which is not the test's concern).
            reply.raw.on('close', () => {
              transport.close().catch(() => undefined)
              server.close().catch(() => undefined)
            })
            try {
              await server.connect(transport)
              await transport.handleRequest(request.raw, reply.raw, request.body)
            } catch (error) {
              if ((error as Error).name !== 'AbortError') throw error
            }
          },
        },
      )
    })
    after(async () => {
      // Every exchange with authgate, the SDK's own included (docs/mcp.md shows one run).
      if (process.env.AUTHGATE_E2E_TRANSCRIPT) console.log(stack?.lines.join('\n'))
      try {
        await stack?.stop()
      } finally {
        await browser?.close()
        await callbacks?.close()
        await docs?.close()
      }
    })

    /** Requests to authgate from outside a browser (redirects not followed), written into `stack.lines`. */
    const send = (url: string, init: RequestInit = {}) => stack.fetch(url, { redirect: 'manual', ...init })

    it('the metadata advertises documents; the SDK names itself by the URL and is sent to authorize', async () => {
      const metadata = (await (
        await send(`${stack.publicOrigin}/.well-known/oauth-authorization-server/auth`)
      ).json()) as Record<string, unknown>
      assert.equal(metadata.client_id_metadata_document_supported, true)

      const client = new parts.Client({ name: 'cimd-test', version: '1.0.0' })
      const transport = new parts.StreamableHTTPClientTransport(new URL(stack.resource), {
        authProvider: provider,
        fetch: stack.fetch,
      })
      await assert.rejects(client.connect(transport), parts.UnauthorizedError)
      assert.equal(provider.client?.client_id, docUrl, 'no registration: the URL is the client id')
      const url = provider.authorizationUrl!
      assert.equal(url.searchParams.get('client_id'), docUrl)
      assert.equal(url.searchParams.get('resource'), stack.resource)
    })

    it('authorize fetches the document once and sends the browser to authgate’s consent page', async () => {
      const toConsent = await send(provider.authorizationUrl!.href)
      assert.equal(toConsent.status, 302)
      const consentUrl = new URL(toConsent.headers.get('location')!)
      assert.equal(consentUrl.origin + consentUrl.pathname, `${stack.publicOrigin}/oauth/consent`)
      authorizationId = consentUrl.searchParams.get('authorization_id')!
      assert.deepEqual(docs.fetches, ['/mcp-client.json'])

      // A second authorization within the document's max-age reads the cached document.
      const again = await send(provider.authorizationUrl!.href)
      assert.equal(again.status, 302)
      await again.body?.cancel()
      assert.deepEqual(docs.fetches, ['/mcp-client.json'], 'served from the cache (max-age=300)')
    })

    it('a redirect_uri outside the document is refused without redirecting', async () => {
      const url = new URL(provider.authorizationUrl!)
      url.searchParams.set('redirect_uri', 'http://localhost:3000/elsewhere')
      const refused = await send(url.href)
      assert.equal(refused.status, 400)
      assert.equal(refused.headers.get('location'), null)
      assert.match(((await refused.json()) as { msg: string }).msg, /redirect_uri/)
    })

    /** A page of the consent flow as the user sees it, kept where AUTHGATE_E2E_SCREENSHOTS names a directory. */
    const screenshot = async (page: Page, name: string) => {
      const dir = process.env.AUTHGATE_E2E_SCREENSHOTS
      if (dir) await page.screenshot({ path: join(dir, `consent-page-${name}.png`), fullPage: true })
    }
    /** Chromium from the client's authorization URL to authgate's page; the answer of the page's GET. */
    const openConsentPage = async (page: Page) => {
      const answer = await page.goto(provider.authorizationUrl!.href)
      assert.ok(answer)
      const url = new URL(page.url())
      assert.equal(url.origin + url.pathname, `${stack.publicOrigin}/oauth/consent`)
      return { answer, authorizationId: url.searchParams.get('authorization_id')! }
    }
    /** Types into the sign-in form and sends it, as the user does; the answer of the page's POST. */
    const signIn = async (page: Page, password: string) => {
      await page.fill('#email', CIMD_EMAIL)
      await page.fill('#password', password)
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST'),
        page.click('button[type=submit]'),
      ])
      await page.waitForLoadState()
      return answer
    }
    /** Clicks Approve or Deny; the URL the browser was sent back to, at the client. */
    const decide = async (page: Page, decision: 'Approve' | 'Deny') => {
      await Promise.all([page.waitForURL((u) => u.href.startsWith(callbacks.redirect)), page.click(`text=${decision}`)])
      return new URL(page.url())
    }

    it('the page asks an unknown user to sign in, and a wrong password is refused', async () => {
      const page = await browser.newPage()
      try {
        const { answer } = await openConsentPage(page)
        assert.equal(answer.status(), 200)
        const headers = await answer.allHeaders()
        assert.match(headers['content-security-policy']!, /frame-ancestors 'none'/)
        assert.match(headers['content-security-policy']!, /default-src 'none'/)
        assert.equal(headers['x-frame-options'], 'DENY')
        assert.equal(headers['cache-control'], 'no-store')
        assert.equal(headers['referrer-policy'], 'same-origin', 'a form POST carries the page’s own Origin')
        const html = await page.content()
        assert.doesNotMatch(html, /<script|https?:\/\/(?!localhost)/, 'no script, nothing loaded from elsewhere')
        await screenshot(page, '1-sign-in')

        const wrong = await signIn(page, 'not-the-password')
        assert.equal(wrong.status(), 400)
        assert.match((await page.textContent('[role=alert]')) ?? '', /not right/)
      } finally {
        await page.close()
      }
    })

    it('a form on another site posting to the page is refused (Chromium sends that site’s Origin)', async () => {
      const page = await browser.newPage()
      try {
        const { authorizationId: id } = await openConsentPage(page)
        const fields = { authorization_id: id, decision: 'sign_in', email: CIMD_EMAIL, password: PASSWORD }
        const [answer] = await Promise.all([
          page.waitForResponse((r) => r.url().startsWith(`${stack.publicOrigin}/oauth/consent`)),
          page.goto(
            `${callbacks.otherSite}/other-site?${new URLSearchParams({ target: `${stack.publicOrigin}/oauth/consent`, ...fields })}`,
          ),
        ])
        assert.equal(answer.request().method(), 'POST')
        assert.equal(answer.status(), 403)
        await page.waitForLoadState()
        assert.match((await page.textContent('body')) ?? '', /only be sent from the consent page itself/)
      } finally {
        await page.close()
      }
    })

    it('deny sends the browser back to the client with access_denied and iss (before any consent is given)', async () => {
      const page = await browser.newPage()
      try {
        await openConsentPage(page)
        assert.equal((await signIn(page, PASSWORD)).status(), 200)
        const callback = await decide(page, 'Deny')
        assert.equal(callback.origin + callback.pathname, callbacks.redirect)
        assert.equal(callback.searchParams.get('error'), 'access_denied')
        assert.equal(callback.searchParams.get('iss'), stack.publicUrl)
        assert.equal(callback.searchParams.get('code'), null)
        await screenshot(page, '3-after-deny')
      } finally {
        await page.close()
      }
    })

    it('signed in, the user sees the client by its URL, where it sends them, the scopes, and approves', async () => {
      const page = await browser.newPage()
      try {
        const { authorizationId: id } = await openConsentPage(page)
        authorizationId = id
        const signedIn = await signIn(page, PASSWORD)
        assert.equal(signedIn.status(), 200)
        const text = (await page.textContent('body')) ?? ''
        assert.match(text, /Todo MCP client/)
        assert.ok(text.includes(docUrl), "the client id shown is the document's URL")
        assert.equal(await page.textContent('strong'), callbacks.host)
        assert.match(await page.innerHTML('body'), /<code>openid<\/code>/)
        assert.match(await page.innerHTML('body'), /<code>email<\/code>/)
        const csp = (await signedIn.allHeaders())['content-security-policy']!
        assert.ok(csp.includes(`form-action 'self' ${callbacks.origin}`), csp)
        await screenshot(page, '2-consent')

        // The consent API, asked by the signed-in user directly, names the client by its URL too.
        const token = await page.inputValue('input[name=access_token]')
        const details = await send(`${stack.publicUrl}/oauth/authorizations/${authorizationId}`, {
          headers: { authorization: `Bearer ${token}` },
        })
        assert.equal(details.status, 200)
        assert.equal(((await details.json()) as { client: { id: string } }).client.id, docUrl)

        const callback = await decide(page, 'Approve')
        assert.equal(callback.origin + callback.pathname, callbacks.redirect)
        assert.equal(callback.searchParams.get('iss'), stack.publicUrl)
        assert.equal(callback.searchParams.get('state'), provider.authorizationUrl!.searchParams.get('state'))
        callbackCode = callback.searchParams.get('code')!
        assert.ok(callbackCode)
      } finally {
        await page.close()
      }
    })

    it('the SDK exchanges the code with its URL as client_id and calls a tool on the MCP server', async () => {
      const transport = new parts.StreamableHTTPClientTransport(new URL(stack.resource), {
        authProvider: provider,
        fetch: stack.fetch,
      })
      await transport.finishAuth(callbackCode)
      const token = provider.saved!.access_token
      const claims = decodeJws(token).payload as { aud: unknown; client_id: string }
      assert.equal(claims.aud, stack.resource)
      assert.match(claims.client_id, /^[0-9a-f-]{36}$/, "the token's client_id is the backend client (signed)")

      const client = new parts.Client({ name: 'cimd-test', version: '1.0.0' })
      await client.connect(
        new parts.StreamableHTTPClientTransport(new URL(stack.resource), {
          authProvider: provider,
          fetch: stack.fetch,
        }),
      )
      const result = await client.callTool({ name: 'whoami', arguments: {} })
      const who = JSON.parse(result.content[0]!.text!) as { sub: string; client_id: string }
      assert.equal(who.client_id, claims.client_id)
      await client.close()
    })

    it('refreshes with the URL as client_id; the new token calls the tool', async () => {
      const before = provider.saved!.access_token
      assert.equal(await sdk!.auth(provider, { serverUrl: stack.resource, fetchFn: stack.fetch }), 'AUTHORIZED')
      assert.notEqual(provider.saved!.access_token, before)
      const client = new parts.Client({ name: 'cimd-test', version: '1.0.0' })
      await client.connect(
        new parts.StreamableHTTPClientTransport(new URL(stack.resource), {
          authProvider: provider,
          fetch: stack.fetch,
        }),
      )
      const result = await client.callTool({ name: 'whoami', arguments: {} })
      assert.equal(result.content[0]!.type, 'text')
      await client.close()
    })

    const initialize = (url: string, token: string) =>
      send(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      })

    it('refuses the MCP token at another MCP server (a token issued for another resource)', async () => {
      const refused = await initialize(stack.otherResource, provider.saved!.access_token)
      assert.equal(refused.status, 401)
      assert.match(refused.headers.get('www-authenticate')!, /error="invalid_token"/)
      assert.match(refused.headers.get('www-authenticate')!, /oauth-protected-resource\/other-mcp/)
      await refused.body?.cancel()
    })

    it('refuses a plain supabase-js session token at the MCP server', async () => {
      const refused = await initialize(stack.resource, stack.sessionToken)
      assert.equal(refused.status, 401)
      assert.match(refused.headers.get('www-authenticate')!, /error="invalid_token"/)
      await refused.body?.cancel()
    })

    it('the grant list names the client by its URL', async () => {
      const { data } = await stack.user.signInWithPassword({ email: CIMD_EMAIL, password: PASSWORD })
      const grants = await send(`${stack.publicUrl}/user/oauth/grants`, {
        headers: { authorization: `Bearer ${data.session!.access_token}` },
      })
      assert.equal(grants.status, 200)
      const list = (await grants.json()) as Array<{ client: { id: string } }>
      assert.deepEqual(
        list.map((g) => g.client.id),
        [docUrl],
      )
    })

    it('a document whose redirect URIs change gets a backend client with the new ones', async () => {
      const url = `${docs.origin}/changing-client.json`
      const document = (redirect: string) => ({
        cacheControl: 'no-cache',
        body: { client_id: url, client_name: 'Changing client', redirect_uris: [redirect] },
      })
      const authorize = (redirect: string) => {
        const u = new URL(provider.authorizationUrl!)
        u.searchParams.set('client_id', url)
        u.searchParams.set('redirect_uri', redirect)
        return send(u.href)
      }
      docs.documents.set('/changing-client.json', document('http://localhost:3000/first'))
      const first = await authorize('http://localhost:3000/first')
      assert.equal(first.status, 302)
      assert.match(first.headers.get('location')!, /\/oauth\/consent\?authorization_id=/)
      const registry = stack.gateway.app.authgate.clientMetadata!
      const before = await registry.idOf(url, stack.gateway.app.log)
      assert.ok(before.ok)
      docs.documents.set('/changing-client.json', document('http://localhost:3000/second'))
      const second = await authorize('http://localhost:3000/second')
      assert.equal(second.status, 302, 'Supabase Auth knows the new redirect URI')
      assert.match(second.headers.get('location')!, /\/oauth\/consent\?authorization_id=/)
      const old = await authorize('http://localhost:3000/first')
      assert.equal(old.status, 400, 'the old one is no longer the document’s')
      await old.body?.cancel()

      // The client the change replaced still has the old redirect URI at Supabase Auth: named by
      // its UUID, it is refused at /oauth/authorize and at the token endpoint.
      const byUuid = new URL(provider.authorizationUrl!)
      byUuid.searchParams.set('client_id', before.id)
      byUuid.searchParams.set('redirect_uri', 'http://localhost:3000/first')
      const replaced = await send(byUuid.href)
      assert.equal(replaced.status, 400, 'not sent to the consent page')
      assert.equal(replaced.headers.get('location'), null)
      assert.match(((await replaced.json()) as { msg: string }).msg, /replaced/)
      // Under every spelling of the UUID Supabase Auth's parser takes for the same client.
      const hex = before.id.replaceAll('-', '')
      for (const spelling of [before.id.toUpperCase(), hex, `urn:uuid:${before.id}`, `{${before.id}}`, `{${hex}}`]) {
        byUuid.searchParams.set('client_id', spelling)
        const again = await send(byUuid.href)
        assert.equal(again.status, 400, spelling)
        assert.match(((await again.json()) as { msg: string }).msg, /replaced/, spelling)
      }
      const token = await send(`${stack.publicUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: 'a-refresh-token-of-the-old-client',
          client_id: before.id,
        }).toString(),
      })
      assert.equal(((await token.json()) as { error: string }).error, 'invalid_client')
    })

    it('refuses documents authgate may not use: another origin, a wrong client_id, a secret', async () => {
      const bad = async (path: string, body: Record<string, unknown> | undefined, expected: RegExp) => {
        const url = `${docs.origin}${path}`
        if (body) docs.documents.set(path, { cacheControl: 'no-store', body: { client_id: url, ...body } })
        const u = new URL(provider.authorizationUrl!)
        u.searchParams.set('client_id', url)
        const refused = await send(u.href)
        assert.equal(refused.status, 400, path)
        assert.match(((await refused.json()) as { msg: string }).msg, expected)
      }
      await bad('/secret.json', { redirect_uris: [CIMD_REDIRECT], client_secret: 's' }, /secret/)
      await bad(
        '/wrong-id.json',
        { client_id: 'https://elsewhere.example/x', redirect_uris: [CIMD_REDIRECT] },
        /client_id/,
      )
      await bad('/missing.json', undefined, /404/)
      const u = new URL(provider.authorizationUrl!)
      u.searchParams.set('client_id', 'https://clients.example.org/mcp.json')
      const elsewhere = await send(u.href)
      assert.equal(elsewhere.status, 400)
      assert.match(((await elsewhere.json()) as { msg: string }).msg, /not accepted/)
      // The token endpoint refuses such a client_id in RFC 6749's words.
      const token = await send(`${stack.publicUrl}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: 'x',
          client_id: 'https://clients.example.org/mcp.json',
        }).toString(),
      })
      assert.equal(token.status, 400)
      assert.equal(((await token.json()) as { error: string }).error, 'invalid_client')
    })
  },
)
