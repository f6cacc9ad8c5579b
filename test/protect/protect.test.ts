import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { UnsecuredJWT } from 'jose'
import { authgateProtect, type ProtectOptions } from '../../src/protect/index.ts'
import { defineRoute } from '../../src/routes-dsl/define-route.ts'
import { ISSUER, makeKey, sign, signHs256, startKeyServer, type KeyServer, type SigningKey } from './support.ts'

const SECRET = 'super-secret-jwt-token-with-at-least-32-characters'

async function appWith(server: KeyServer, options: Partial<ProtectOptions> = {}): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(authgateProtect, {
    backendUrl: new URL(server.url),
    issuer: ISSUER,
    jwksCooldownMs: 200,
    ...options,
  })
  app.route(defineRoute({ method: 'GET', url: '/me', auth: 'required', handler: async (req) => req.user }))
  app.route(
    defineRoute({
      method: 'GET',
      url: '/maybe',
      auth: 'optional',
      handler: async (req) => ({ sub: req.user?.sub ?? null }),
    }),
  )
  app.route(defineRoute({ method: 'GET', url: '/mfa', auth: { aal: 'aal2' }, handler: async () => ({ ok: true }) }))
  app.route(
    defineRoute({ method: 'GET', url: '/admin', auth: { role: 'service_role' }, handler: async () => ({ ok: true }) }),
  )
  app.route(
    defineRoute({ method: 'GET', url: '/scoped', auth: { scope: 'email' }, handler: async () => ({ ok: true }) }),
  )
  if (options.sessionCheck)
    app.route(
      defineRoute({ method: 'GET', url: '/live', auth: { session: true }, handler: async () => ({ ok: true }) }),
    )
  await app.ready()
  return app
}

const get = (app: FastifyInstance, url: string, token?: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } })

describe('protect: local verification against the key set', () => {
  let key: SigningKey
  let server: KeyServer
  let app: FastifyInstance

  before(async () => {
    key = await makeKey()
    server = await startKeyServer([key.publicJwk])
    app = await appWith(server, { secret: SECRET })
  })
  after(async () => {
    await app.close()
    await server.close()
  })

  it('a valid token passes and request.user carries its typed claims', async () => {
    const token = await sign(key)
    const res = await get(app, '/me', token)
    assert.equal(res.statusCode, 200)
    const user = res.json()
    assert.equal(user.sub, '8d0b1f0e-5c4e-4a5e-9a44-0b0b6f4c3b11')
    assert.equal(user.role, 'authenticated')
    assert.equal(user.aal, 'aal1')
    assert.equal(user.email, 'ada@example.com')
    assert.equal(user.phone, undefined, 'an empty phone claim is absent')
    assert.equal(user.session_id, '2c7b3f1e-1d2a-4c9a-8b8e-3a8f9e0d1c2b')
    assert.equal(user.is_anonymous, false)
    assert.deepEqual(user.amr, [{ method: 'password', timestamp: 1700000000 }])
    assert.deepEqual(user.user_metadata, { plan: 'free' })
    assert.equal(user.token, token)
  })

  it('no token: 401 no_authorization with a bare challenge naming the resource metadata', async () => {
    const res = await get(app, '/me')
    assert.equal(res.statusCode, 401)
    assert.equal(res.headers['x-sb-error-code'], 'no_authorization')
    assert.equal(
      res.headers['www-authenticate'],
      'Bearer resource_metadata="http://localhost:8080/.well-known/oauth-protected-resource"',
    )
    assert.deepEqual(res.json(), {
      code: 401,
      error_code: 'no_authorization',
      msg: 'This endpoint requires a valid Bearer token',
    })
  })

  for (const authorization of ['Basic YTpi', 'Bearer', 'Bearer a b', 'Bearer\ttoken', 'Token abc']) {
    it(`a malformed Authorization header (${JSON.stringify(authorization)}): 400 invalid_request (RFC 6750 §3.1)`, async () => {
      const res = await get(app, '/me', undefined, { authorization })
      assert.equal(res.statusCode, 400)
      assert.equal(res.headers['x-sb-error-code'], 'bad_authorization_header')
      assert.match(String(res.headers['www-authenticate']), /^Bearer error="invalid_request"/)
      assert.equal(res.json().error_code, 'bad_authorization_header')
    })
  }

  for (const [name, make, description] of [
    ['expired', () => sign(key, {}, { expiresIn: Math.floor(Date.now() / 1000) - 60 }), 'expired'],
    ['from another issuer', () => sign(key, {}, { issuer: 'https://evil.example.com/auth' }), 'another issuer'],
    ['for another audience', () => sign(key, { aud: 'somebody-else' }), 'another audience'],
    [
      'tampered with',
      async () => {
        const [h, , s] = (await sign(key)).split('.')
        const forged = Buffer.from(
          JSON.stringify({ sub: 'x', role: 'service_role', aud: 'authenticated', iss: ISSUER }),
        )
        return `${h}.${forged.toString('base64url')}.${s}`
      },
      'signature',
    ],
    ['signed with a foreign key', async () => sign(await makeKey()), 'unknown key'],
    [
      'unsigned (alg none)',
      async () => new UnsecuredJWT({ sub: 'x', role: 'authenticated' }).encode(),
      'algorithm not accepted',
    ],
    ['without a role claim', () => sign(key, { role: undefined }), 'no role'],
  ] as const) {
    it(`a token ${name}: 401 bad_jwt, invalid_token`, async () => {
      const res = await get(app, '/me', await make())
      assert.equal(res.statusCode, 401)
      assert.equal(res.headers['x-sb-error-code'], 'bad_jwt')
      const challenge = String(res.headers['www-authenticate'])
      assert.match(challenge, /^Bearer error="invalid_token", error_description="[^"]*/)
      assert.match(challenge, new RegExp(description))
      assert.match(challenge, /resource_metadata="http:\/\/localhost:8080\/.well-known\/oauth-protected-resource"$/)
    })
  }

  it('a token issued in the future (beyond the tolerance) is refused; within it, accepted', async () => {
    const now = Math.floor(Date.now() / 1000)
    const far = await get(
      app,
      '/me',
      await sign(key, {}, { issuedAt: now + 10 * 365 * 24 * 3600, expiresIn: now + 11 * 365 * 24 * 3600 }),
    )
    assert.equal(far.statusCode, 401)
    assert.equal(far.headers['x-sb-error-code'], 'bad_jwt')
    assert.match(String(far.headers['www-authenticate']), /error="invalid_token".*issued in the future/)
    const soon = await get(app, '/me', await sign(key, {}, { issuedAt: now + 60 }))
    assert.equal(soon.statusCode, 401, 'a minute ahead is past the 5 s tolerance')
    assert.equal(
      (await get(app, '/me', await sign(key, {}, { issuedAt: now + 2 }))).statusCode,
      200,
      'within the tolerance',
    )
  })

  it('the 2024-01-01 error shape is honoured', async () => {
    const res = await get(app, '/me', 'not.a.jwt', { 'x-supabase-api-version': '2024-01-01' })
    assert.equal(res.statusCode, 401)
    assert.equal(res.json().code, 'bad_jwt')
  })

  it('HS256 tokens verify with the configured secret', async () => {
    const res = await get(app, '/me', await signHs256(SECRET))
    assert.equal(res.statusCode, 200)
    const wrong = await get(app, '/me', await signHs256('another-secret-another-secret-another-secret'))
    assert.equal(wrong.statusCode, 401)
  })

  it('optional: no token passes with a null user; a bad token is still refused', async () => {
    assert.deepEqual((await get(app, '/maybe')).json(), { sub: null })
    assert.equal((await get(app, '/maybe', await sign(key))).json().sub, '8d0b1f0e-5c4e-4a5e-9a44-0b0b6f4c3b11')
    assert.equal((await get(app, '/maybe', 'garbage')).statusCode, 401)
  })

  it('an aal1 token on an aal2 route: 401 insufficient_aal with the RFC 9470 challenge; an aal2 token passes', async () => {
    const res = await get(app, '/mfa', await sign(key))
    assert.equal(res.statusCode, 401)
    assert.equal(res.headers['x-sb-error-code'], 'insufficient_aal')
    assert.equal(res.json().error_code, 'insufficient_aal')
    const challenge = String(res.headers['www-authenticate'])
    assert.match(challenge, /^Bearer error="insufficient_user_authentication", error_description="[^"]*aal2[^"]*"/)
    assert.match(challenge, /acr_values="aal2 aal3"/)
    assert.equal((await get(app, '/mfa', await sign(key, { aal: 'aal2' }))).statusCode, 200)
  })

  it('role: 403 insufficient_role unless the role matches', async () => {
    const res = await get(app, '/admin', await sign(key))
    assert.equal(res.statusCode, 403)
    assert.equal(res.headers['x-sb-error-code'], 'insufficient_role')
    assert.equal((await get(app, '/admin', await sign(key, { role: 'service_role' }))).statusCode, 200)
  })

  it("scope: an OAuth client's token needs the scope; a first-party session is not scoped", async () => {
    const client = { client_id: '0f3c1a52-8d5e-4f7e-9a0b-1c2d3e4f5a6b' }
    const res = await get(app, '/scoped', await sign(key, { ...client, scope: 'openid profile' }))
    assert.equal(res.statusCode, 403)
    assert.equal(res.headers['x-sb-error-code'], 'insufficient_scope')
    assert.match(String(res.headers['www-authenticate']), /error="insufficient_scope".*scope="email"/)
    assert.equal((await get(app, '/scoped', await sign(key, { ...client, scope: 'openid email' }))).statusCode, 200)
    assert.equal((await get(app, '/scoped', await sign(key))).statusCode, 200)
  })

  it('serves RFC 9728 metadata naming the issuer as authorization server', async () => {
    const res = await get(app, '/.well-known/oauth-protected-resource')
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), {
      resource: 'http://localhost:8080',
      authorization_servers: [ISSUER],
      bearer_methods_supported: ['header'],
    })
  })
})

describe('protect: the key set cache', () => {
  it('fetches once, refetches for an unknown kid (a rotation), and bounds refetches by the cooldown', async () => {
    const oldKey = await makeKey()
    const server = await startKeyServer([oldKey.publicJwk])
    const app = await appWith(server)
    try {
      for (let i = 0; i < 5; i++) assert.equal((await get(app, '/me', await sign(oldKey))).statusCode, 200)
      assert.equal(server.jwksCalls, 1)

      await new Promise((r) => setTimeout(r, 250)) // past the cooldown
      const newKey = await makeKey('RS256')
      server.keys = [newKey.publicJwk, oldKey.publicJwk]
      assert.equal((await get(app, '/me', await sign(newKey))).statusCode, 200, 'the rotated key is picked up')
      assert.equal(server.jwksCalls, 2)

      // Tokens naming keys that do not exist: at most one refetch per cooldown, however many.
      const stranger = await makeKey()
      const results = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => get(app, '/me', await sign(stranger, {}, { kid: `made-up-${i}` }))),
      )
      assert.ok(results.every((r) => r.statusCode === 401))
      assert.ok(server.jwksCalls <= 3, `${server.jwksCalls} fetches`)
    } finally {
      await app.close()
      await server.close()
    }
  })

  it('the backend down with no keys yet: 502; with keys fetched before: they keep working', async () => {
    const key = await makeKey()
    const server = await startKeyServer([key.publicJwk])
    server.down = true
    const app = await appWith(server, { jwksCacheMaxAgeMs: 100 })
    try {
      const res = await get(app, '/me', await sign(key))
      assert.equal(res.statusCode, 502)
      assert.equal(res.headers['x-sb-error-code'], 'backend_unreachable')
      server.down = false
      await new Promise((r) => setTimeout(r, 250)) // past the failure's cooldown
      assert.equal((await get(app, '/me', await sign(key))).statusCode, 200)
      server.down = true
      await new Promise((r) => setTimeout(r, 150)) // the cache is now stale
      assert.equal((await get(app, '/me', await sign(key))).statusCode, 200)
    } finally {
      await app.close()
      await server.close()
    }
  })
})

describe('protect: the key set unreachable before any key was fetched', () => {
  it('200 bearer requests make one fetch; the rest are answered 502 from the cooldown', async () => {
    let fetches = 0
    const server = createServer((req, res) => {
      fetches++
      res.writeHead(503).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const app = Fastify()
    await app.register(authgateProtect, {
      jwksUrl: new URL(`http://127.0.0.1:${port}/.well-known/jwks.json`),
      issuer: ISSUER,
      jwksCooldownMs: 60_000, // far longer than the test, however slow the machine
    })
    app.route(defineRoute({ method: 'GET', url: '/me', auth: 'required', handler: async () => ({ ok: true }) }))
    try {
      const token = 'eyJhbGciOiJFUzI1NiJ9.e30.AAAA'
      const statuses: number[] = []
      // Half at once (the first fetch is shared), then one at a time (each after the failure).
      const burst = await Promise.all(Array.from({ length: 100 }, () => get(app, '/me', token)))
      statuses.push(...burst.map((r) => r.statusCode))
      for (let i = 0; i < 100; i++) {
        const res = await get(app, '/me', token)
        statuses.push(res.statusCode)
        if (i === 0) assert.equal(res.headers['x-sb-error-code'], 'backend_unreachable')
      }
      assert.ok(
        statuses.every((s) => s === 502),
        `statuses: ${[...new Set(statuses)].join(', ')}`,
      )
      assert.equal(fetches, 1, `${fetches} fetches for 200 requests`)
    } finally {
      await app.close()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  it('after the cooldown the key set is fetched again and tokens pass', async () => {
    const key = await makeKey()
    const server = await startKeyServer([key.publicJwk])
    server.down = true
    const app = await appWith(server) // cooldown 200 ms
    try {
      assert.equal((await get(app, '/me', await sign(key))).statusCode, 502)
      server.down = false
      assert.equal((await get(app, '/me', await sign(key))).statusCode, 502, 'within the cooldown')
      assert.equal(server.jwksCalls, 0)
      await new Promise((r) => setTimeout(r, 300))
      assert.equal((await get(app, '/me', await sign(key))).statusCode, 200)
      assert.equal(server.jwksCalls, 1)
    } finally {
      await app.close()
      await server.close()
    }
  })
})

describe('protect: session check', () => {
  it('a signed-out session passes locally but not on a route that checks; answers are cached for the TTL', async () => {
    const key = await makeKey()
    const server = await startKeyServer([key.publicJwk])
    const app = await appWith(server, { sessionCheck: { ttlMs: 200 } })
    try {
      const token = await sign(key)
      assert.equal((await get(app, '/live', token)).statusCode, 200)
      assert.equal((await get(app, '/live', token)).statusCode, 200)
      assert.equal(server.userCalls, 1, 'the second answer came from the cache')

      server.endedSessions.add('2c7b3f1e-1d2a-4c9a-8b8e-3a8f9e0d1c2b')
      assert.equal((await get(app, '/live', token)).statusCode, 200, 'within the TTL the cached answer stands')
      await new Promise((r) => setTimeout(r, 250))
      const res = await get(app, '/live', token)
      assert.equal(res.statusCode, 401)
      assert.equal(res.headers['x-sb-error-code'], 'session_not_found')
      assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/)
      assert.equal((await get(app, '/me', token)).statusCode, 200, 'routes without the check still accept it')
    } finally {
      await app.close()
      await server.close()
    }
  })

  it('the backend unreachable during a session check: 502, never let through', async () => {
    const key = await makeKey()
    const server = await startKeyServer([key.publicJwk])
    const app = await appWith(server, { sessionCheck: true })
    try {
      const token = await sign(key)
      assert.equal((await get(app, '/me', token)).statusCode, 200)
      server.down = true
      assert.equal((await get(app, '/live', token)).statusCode, 502)
    } finally {
      await app.close()
      await server.close()
    }
  })
})

describe('protect: fail closed', () => {
  it('a route with an auth requirement but no protect plugin is refused with 500', async () => {
    const app = Fastify()
    app.route(defineRoute({ method: 'GET', url: '/me', auth: 'required', handler: async () => ({ ok: true }) }))
    const res = await app.inject({ method: 'GET', url: '/me', headers: { authorization: 'Bearer x' } })
    assert.equal(res.statusCode, 500)
    await app.close()
  })

  it('the token is checked before the body is parsed', async () => {
    const key = await makeKey()
    const server = await startKeyServer([key.publicJwk])
    const app = Fastify()
    await app.register(authgateProtect, { backendUrl: new URL(server.url), issuer: ISSUER })
    let parsed = false
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
      parsed = true
      done(null, JSON.parse(body as string))
    })
    app.route(defineRoute({ method: 'POST', url: '/x', auth: 'required', handler: async () => ({ ok: true }) }))
    try {
      const res = await app.inject({ method: 'POST', url: '/x', payload: { a: 1 } })
      assert.equal(res.statusCode, 401)
      assert.equal(parsed, false)
    } finally {
      await app.close()
      await server.close()
    }
  })

  it('an HS256 token is refused when no secret is configured', async () => {
    const key = await makeKey()
    const server = await startKeyServer([key.publicJwk])
    const app = await appWith(server)
    try {
      const res = await get(app, '/me', await signHs256(SECRET))
      assert.equal(res.statusCode, 401)
      assert.match(String(res.headers['www-authenticate']), /algorithm not accepted/)
      assert.equal(server.jwksCalls, 0, 'refused before any key lookup')
    } finally {
      await app.close()
      await server.close()
    }
  })
})
