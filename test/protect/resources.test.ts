import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { AuthgateConfigError } from '../../src/config/env.ts'
import { authgateProtect, type ProtectOptions } from '../../src/protect/index.ts'
import { normaliseAuth, routeAuthOf } from '../../src/protect/requirement.ts'
import { scopePolicy } from '../../src/protect/scopes.ts'
import { defineRoute } from '../../src/routes-dsl/define-route.ts'
import { ISSUER, makeKey, sign, startKeyServer, type KeyServer, type SigningKey } from './support.ts'

const MCP = 'http://localhost:8080/mcp'
const CLIENT = '0f3c1a52-8d5e-4f7e-9a0b-1c2d3e4f5a6b'
const OTHER_CLIENT = '7a1e2b3c-4d5e-4f60-8a9b-0c1d2e3f4a5b'
const ok = async () => ({ ok: true })

async function appWith(server: KeyServer, options: Partial<ProtectOptions> = {}): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(authgateProtect, {
    backendUrl: new URL(server.url),
    issuer: ISSUER,
    resources: [{ resource: MCP, resourceName: 'Todo MCP', scopesSupported: ['openid', 'email'] }],
    hookScopes: ['todos:write'],
    ...options,
  })
  app.route(defineRoute({ method: 'POST', url: '/mcp', auth: { resource: MCP }, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/mcp/pinned', auth: { resource: MCP, clients: CLIENT }, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/partner', auth: { audience: ['partner-api'] }, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/apps', auth: { clients: [CLIENT] }, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/write', auth: { resource: MCP, scope: 'todos:write' }, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/me', auth: 'required', handler: ok }))
  await app.ready()
  return app
}

const call = (app: FastifyInstance, method: 'GET' | 'POST', url: string, token?: string) =>
  app.inject({ method, url, headers: token ? { authorization: `Bearer ${token}` } : {} })

/** The MCP SDK's check of the metadata against the URL it connected to (same origin, path prefix). */
function sdkAcceptsResource(serverUrl: string, resource: string): boolean {
  const requested = new URL(serverUrl)
  const configured = new URL(resource)
  if (requested.origin !== configured.origin) return false
  const slash = (p: string) => (p.endsWith('/') ? p : `${p}/`)
  return slash(requested.pathname).startsWith(slash(configured.pathname))
}

describe('protect: OAuth protected resources (MCP servers)', () => {
  let key: SigningKey
  let server: KeyServer
  let app: FastifyInstance
  const forMcp = { aud: MCP, client_id: CLIENT, scope: 'openid email' }

  before(async () => {
    key = await makeKey()
    server = await startKeyServer([key.publicJwk])
    app = await appWith(server)
  })
  after(async () => {
    await app.close()
    await server.close()
  })

  it('serves the resource metadata where the MCP SDK looks, naming the resource as it connects to it', async () => {
    const res = await call(app, 'GET', '/.well-known/oauth-protected-resource/mcp')
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), {
      resource: MCP,
      authorization_servers: [ISSUER],
      bearer_methods_supported: ['header'],
      resource_name: 'Todo MCP',
      scopes_supported: ['openid', 'email'],
    })
    assert.ok(sdkAcceptsResource(MCP, res.json().resource))
    assert.ok(sdkAcceptsResource(`${MCP}/`, res.json().resource))
    // The application's own metadata is still there.
    assert.equal(
      (await call(app, 'GET', '/.well-known/oauth-protected-resource')).json().resource,
      'http://localhost:8080',
    )
  })

  it('no token: 401 whose challenge names the resource metadata', async () => {
    const res = await call(app, 'POST', '/mcp')
    assert.equal(res.statusCode, 401)
    assert.equal(
      res.headers['www-authenticate'],
      'Bearer resource_metadata="http://localhost:8080/.well-known/oauth-protected-resource/mcp"',
    )
  })

  it("a resource route's 401 names the scopes it needs that a client can ask for", async () => {
    const app2 = Fastify()
    await app2.register(authgateProtect, {
      backendUrl: new URL(server.url),
      issuer: ISSUER,
      resources: [{ resource: MCP }],
      hookScopes: ['todos:write'],
    })
    app2.route(
      defineRoute({ method: 'GET', url: '/a', auth: { resource: MCP, scope: ['email', 'todos:write'] }, handler: ok }),
    )
    app2.route(defineRoute({ method: 'GET', url: '/b', auth: { resource: MCP, scope: 'todos:write' }, handler: ok }))
    app2.route(defineRoute({ method: 'GET', url: '/c', auth: { scope: 'email' }, handler: ok }))
    await app2.ready()
    const metadata = 'resource_metadata="http://localhost:8080/.well-known/oauth-protected-resource/mcp"'
    assert.equal((await call(app2, 'GET', '/a')).headers['www-authenticate'], `Bearer scope="email", ${metadata}`)
    assert.equal((await call(app2, 'GET', '/b')).headers['www-authenticate'], `Bearer ${metadata}`)
    // Not a resource route: the challenge stays as it was.
    assert.doesNotMatch(String((await call(app2, 'GET', '/c')).headers['www-authenticate']), /scope=/)
    await app2.close()
  })

  it('a first-party session token (aud authenticated) is refused: invalid_token, another audience', async () => {
    const res = await call(app, 'POST', '/mcp', await sign(key))
    assert.equal(res.statusCode, 401)
    assert.equal(res.headers['x-sb-error-code'], 'bad_jwt')
    assert.match(
      String(res.headers['www-authenticate']),
      /error="invalid_token", error_description="the access token is for another audience"/,
    )
    assert.match(String(res.headers['www-authenticate']), /oauth-protected-resource\/mcp"/)
    // The same token on an ordinary route passes: the audience is the route's, not the token's fate.
    assert.equal((await call(app, 'GET', '/me', await sign(key))).statusCode, 200)
  })

  it('a token issued to an OAuth client for another resource, or for none, is refused', async () => {
    const plainClient = await sign(key, { client_id: CLIENT, scope: 'openid' })
    assert.equal((await call(app, 'POST', '/mcp', plainClient)).statusCode, 401)
    const elsewhere = await sign(key, { client_id: CLIENT, aud: 'http://localhost:8080/other' })
    assert.equal((await call(app, 'POST', '/mcp', elsewhere)).statusCode, 401)
  })

  it('a token for the resource, issued to an OAuth client, passes; the cached token is checked per route', async () => {
    const token = await sign(key, forMcp)
    assert.equal((await call(app, 'POST', '/mcp', token)).statusCode, 200)
    // The verified-token cache holds it now; an ordinary route still refuses its audience.
    const res = await call(app, 'GET', '/me', token)
    assert.equal(res.statusCode, 401)
    assert.match(String(res.headers['www-authenticate']), /another audience/)
    assert.equal((await call(app, 'POST', '/mcp', token)).statusCode, 200)
    // `aud` as a list, as a hook may write it.
    const listed = await sign(key, { ...forMcp, aud: ['authenticated', MCP] })
    assert.equal((await call(app, 'POST', '/mcp', listed)).statusCode, 200)
  })

  it('a session token that a careless hook gave the resource audience is still refused (no client_id)', async () => {
    const res = await call(app, 'POST', '/mcp', await sign(key, { aud: MCP }))
    assert.equal(res.statusCode, 401)
    assert.match(String(res.headers['www-authenticate']), /only access tokens issued to an OAuth client/)
  })

  it('clients: another OAuth client is 403 client_not_allowed, with no error to re-authorize for', async () => {
    assert.equal((await call(app, 'GET', '/mcp/pinned', await sign(key, forMcp))).statusCode, 200)
    const res = await call(app, 'GET', '/mcp/pinned', await sign(key, { ...forMcp, client_id: OTHER_CLIENT }))
    assert.equal(res.statusCode, 403)
    assert.equal(res.headers['x-sb-error-code'], 'client_not_allowed')
    const challenge = String(res.headers['www-authenticate'])
    assert.doesNotMatch(challenge, /error="/)
    assert.match(challenge, /error_description="this operation does not accept tokens issued to this OAuth client"/)

    // Without a resource: a client list alone also keeps session tokens out.
    assert.equal((await call(app, 'GET', '/apps', await sign(key, { client_id: CLIENT }))).statusCode, 200)
    assert.equal((await call(app, 'GET', '/apps', await sign(key))).statusCode, 401)
  })

  it("audience: a route's own list replaces the default", async () => {
    assert.equal((await call(app, 'GET', '/partner', await sign(key, { aud: 'partner-api' }))).statusCode, 200)
    assert.equal((await call(app, 'GET', '/partner', await sign(key))).statusCode, 401)
  })

  it("a scope the hook writes: required from the token's claim, never named in the challenge", async () => {
    const res = await call(app, 'GET', '/write', await sign(key, forMcp))
    assert.equal(res.statusCode, 403)
    assert.equal(res.headers['x-sb-error-code'], 'insufficient_scope')
    const challenge = String(res.headers['www-authenticate'])
    assert.doesNotMatch(challenge, /error="|scope="/)
    assert.match(challenge, /needs the scope todos:write/)
    assert.equal(
      (await call(app, 'GET', '/write', await sign(key, { ...forMcp, scope: 'openid todos:write' }))).statusCode,
      200,
    )
  })

  it('an origin resource accepts the audience as the URL serialiser writes it (trailing slash)', async () => {
    const app2 = Fastify()
    await app2.register(authgateProtect, {
      backendUrl: new URL(server.url),
      issuer: ISSUER,
      resourceMetadata: false,
      resources: [{ resource: 'https://mcp.example.com/' }],
    })
    app2.route(defineRoute({ method: 'GET', url: '/', auth: { resource: 'https://mcp.example.com' }, handler: ok }))
    await app2.ready()
    for (const aud of ['https://mcp.example.com', 'https://mcp.example.com/'])
      assert.equal((await call(app2, 'GET', '/', await sign(key, { aud, client_id: CLIENT }))).statusCode, 200, aud)
    assert.equal(
      (await call(app2, 'GET', '/.well-known/oauth-protected-resource')).json().resource,
      'https://mcp.example.com',
    )
    await app2.close()
  })
})

describe('protect: requirements no token could meet are refused at start-up', () => {
  let server: KeyServer
  before(async () => {
    server = await startKeyServer([])
  })
  after(() => server.close())

  const plugin = async (options: Partial<ProtectOptions> = {}) => {
    const app = Fastify()
    await app.register(authgateProtect, { backendUrl: new URL(server.url), issuer: ISSUER, ...options })
    return app
  }

  it('a scope Supabase Auth cannot grant, unless the hook writes it', async () => {
    const app = await plugin()
    assert.throws(
      () => app.route(defineRoute({ method: 'GET', url: '/todos', auth: { scope: 'todos:read' }, handler: ok })),
      (err: unknown) =>
        err instanceof AuthgateConfigError &&
        err.option === 'GET /todos auth.scope' &&
        /todos:read: not a scope Supabase Auth's OAuth server grants \(openid profile email phone offline_access\)/.test(
          err.message,
        ) &&
        /hookScopes/.test(err.message),
    )
    assert.throws(() => app.authgateProtect!.hook({ scope: ['email', 'todos:read'] }), AuthgateConfigError)
    await app.close()

    const hooked = await plugin({ hookScopes: ['todos:read'] })
    hooked.route(defineRoute({ method: 'GET', url: '/todos', auth: { scope: 'todos:read' }, handler: ok }))
    await hooked.ready()
    await hooked.close()
  })

  it('a resource not declared in `resources`', async () => {
    const app = await plugin()
    assert.throws(
      () => app.route(defineRoute({ method: 'POST', url: '/mcp', auth: { resource: MCP }, handler: ok })),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === 'POST /mcp auth.resource',
    )
    assert.throws(() => app.authgateProtect!.hook({ resource: MCP }), /not declared/)
    await app.close()
  })

  it("metadata that would advertise a scope nobody grants, or the hook's", async () => {
    await assert.rejects(plugin({ resourceMetadata: { scopesSupported: ['todos:read'] } }), AuthgateConfigError)
    await assert.rejects(plugin({ resources: [{ resource: MCP, scopesSupported: ['todos:read'] }] }), /resources\[0\]/)
    await assert.rejects(
      plugin({ hookScopes: ['todos:read'], resources: [{ resource: MCP, scopesSupported: ['todos:read'] }] }),
      /written by the access-token hook/,
    )
  })

  it('resources whose identifiers are not usable, or whose metadata would share a path', async () => {
    for (const resource of ['not a url', 'ftp://x.example/mcp', 'https://x.example/mcp?a=1', 'https://x.example/mcp#f'])
      await assert.rejects(plugin({ resources: [{ resource }] }), AuthgateConfigError, resource)
    await assert.rejects(plugin({ resources: [{ resource: MCP }, { resource: `${MCP}/` }] }), /is taken/)
    await assert.rejects(plugin({ resources: [{ resource: 'http://localhost:8080' }] }), /is taken/)
  })

  it('hookScopes must be scope tokens, and not scopes the server grants itself', () => {
    assert.throws(() => scopePolicy({ fromHook: ['todos read'] }), /not a scope token/)
    assert.throws(() => scopePolicy({ fromHook: ['email'] }), /granted by the authorization server itself/)
  })
})

describe('requirement: audience, clients, resource', () => {
  it('normalises and checks them', () => {
    const auth = normaliseAuth({ resource: `${MCP}/`, clients: CLIENT, audience: 'a' })
    assert.equal(auth.resource, MCP)
    assert.deepEqual(auth.clients, [CLIENT])
    assert.deepEqual(auth.audiences, ['a'])
    assert.throws(() => normaliseAuth({ audience: [] }), /auth.audience/)
    assert.throws(() => normaliseAuth({ audience: '' }), /auth.audience/)
    assert.throws(() => normaliseAuth({ clients: [] }), /auth.clients/)
    assert.throws(() => normaliseAuth({ resource: '/mcp' }), /absolute URL/)
  })

  it('reads them back from a route, and a requirement stored without them as having none', () => {
    const auth = normaliseAuth({ resource: MCP, clients: [CLIENT] })
    assert.deepEqual(routeAuthOf({ auth }), auth)
    const legacy = { mode: 'required', roles: [], scopes: [], session: false }
    assert.deepEqual(routeAuthOf({ auth: legacy }), {
      ...legacy,
      aal: undefined,
      audiences: [],
      clients: [],
      resource: undefined,
    })
    assert.equal(routeAuthOf({ auth: { ...legacy, clients: [1] } }), undefined)
    assert.equal(routeAuthOf({ auth: { ...legacy, resource: 1 } }), undefined)
  })
})

describe('protect: the configured audience, and a resource only found undeclared at request time', () => {
  let key: SigningKey
  let server: KeyServer
  before(async () => {
    key = await makeKey()
    server = await startKeyServer([key.publicJwk])
  })
  after(() => server.close())

  it("protect's `audience`, a string or a list, is every route's default", async () => {
    for (const audience of ['my-api', ['other', 'my-api']]) {
      const app = Fastify()
      await app.register(authgateProtect, { backendUrl: new URL(server.url), issuer: ISSUER, audience })
      app.route(defineRoute({ method: 'GET', url: '/me', auth: 'required', handler: ok }))
      await app.ready()
      assert.equal((await call(app, 'GET', '/me', await sign(key, { aud: 'my-api' }))).statusCode, 200)
      assert.equal((await call(app, 'GET', '/me', await sign(key))).statusCode, 401)
      await app.close()
    }
  })

  it('a route defined before the plugin that names an undeclared resource answers 500, never lets through', async () => {
    const app = Fastify()
    // Registered on the root before the plugin: the start-up check does not see it.
    app.route(defineRoute({ method: 'POST', url: '/mcp', auth: { resource: MCP }, handler: ok }))
    await app.register(authgateProtect, { backendUrl: new URL(server.url), issuer: ISSUER })
    await app.ready()
    const res = await call(app, 'POST', '/mcp', await sign(key, { aud: MCP, client_id: CLIENT }))
    assert.equal(res.statusCode, 500)
    await app.close()
  })
})
