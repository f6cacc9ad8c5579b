import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { buildApp } from '../src/app.ts'
import { AuthgateConfigError, parseBackendUrl } from '../src/config.ts'
import { buildOpenApiDocument, registerDocs } from '../src/docs-server/index.ts'
import { createRegistry } from '../src/openapi/index.ts'
import { authgate } from '../src/plugin.ts'
import { splitFieldTags } from '../src/routes-dsl/index.ts'
import { startFakeBackend, type FakeBackend } from './support/fake-backend.ts'

type Json = Record<string, any>

function failing(status: number, message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode: status })
}

/** The application's own routes, as a team would add them beside authgate. */
function addUserRoutes(app: FastifyInstance): void {
  app.addSchema({
    $id: 'Pet',
    type: 'object',
    properties: { name: { type: 'string', minLength: 1 }, kind: { type: 'string', default: 'cat' } },
    required: ['name'],
  })
  app.get('/forbidden', async () => {
    throw failing(403, 'not yours')
  })
  app.get('/conflict', async () => {
    throw failing(409, 'already there')
  })
  app.get('/unavailable', async () => {
    throw failing(503, 'down for maintenance')
  })
  app.post('/pets', { schema: { tags: ['Pets'], body: { $ref: 'Pet#' } } }, async (request) => ({
    pet: request.body,
    rawBody: request.rawBody === undefined ? 'absent' : 'present',
  }))
  app.post('/echo', async (request) => ({ type: Buffer.isBuffer(request.body) ? 'buffer' : typeof request.body }))
  app.get(
    '/count',
    { schema: { querystring: { type: 'object', properties: { n: { type: 'integer' } } } } },
    (req) => req.query,
  )
  // A plain route using the `in` tags of the single-request-type model (split where the route is
  // defined, so it validates the same with or without a registry listening).
  app.post(
    '/owners/:ownerId/pets',
    {
      schema: splitFieldTags({
        tags: ['Pets'],
        body: {
          type: 'object',
          properties: { ownerId: { type: 'string', in: 'path' }, name: { type: 'string' } },
          required: ['ownerId', 'name'],
        },
      }),
    },
    async (request) => ({ params: request.params, body: request.body }),
  )
}

/** The same expectations for both ways of using authgate. */
function userRouteSuite(name: string, make: (backendUrl: string) => Promise<FastifyInstance>): void {
  describe(name, () => {
    let backend: FakeBackend
    let app: FastifyInstance
    before(async () => {
      backend = await startFakeBackend()
      app = await make(backend.url)
      await app.ready()
    })
    after(async () => {
      await app.close()
      await backend.close()
    })

    test("a user route's 403, 409 and 503 keep their status and Fastify's error body", async () => {
      for (const [url, status, message] of [
        ['/forbidden', 403, 'not yours'],
        ['/conflict', 409, 'already there'],
        ['/unavailable', 503, 'down for maintenance'],
      ] as const) {
        const res = await app.inject({ url })
        assert.equal(res.statusCode, status, url)
        assert.equal(res.json().message, message)
        assert.equal(res.json().statusCode, status)
        assert.equal(res.headers['x-sb-error-code'], undefined, 'not the gateway’s error shape')
      }
    })

    test('a $ref to a shared schema validates, and its defaults are applied', async () => {
      const ok = await app.inject({ method: 'POST', url: '/pets', payload: { name: 'Rex' } })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual(ok.json(), { pet: { name: 'Rex', kind: 'cat' }, rawBody: 'absent' })
      const bad = await app.inject({ method: 'POST', url: '/pets', payload: { name: '' } })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().code, 'FST_ERR_VALIDATION')
    })

    test("query strings are coerced as Fastify does; the user's JSON parser is Fastify's", async () => {
      assert.deepEqual((await app.inject({ url: '/count?n=5' })).json(), { n: 5 })
      const text = await app.inject({
        method: 'POST',
        url: '/echo',
        headers: { 'content-type': 'text/plain' },
        payload: 'Rex',
      })
      assert.deepEqual(text.json(), { type: 'string' }, "Fastify's text/plain parser, not the gateway's byte reader")
      const json = await app.inject({ method: 'POST', url: '/echo', payload: { a: 1 } })
      assert.deepEqual(json.json(), { type: 'object' })
      const other = await app.inject({
        method: 'POST',
        url: '/echo',
        headers: { 'content-type': 'application/xml' },
        payload: '<a/>',
      })
      assert.equal(other.statusCode, 415)
      assert.equal(other.json().code, 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    })

    test('a body field tagged in: path is validated and documented as a path parameter', async () => {
      const res = await app.inject({ method: 'POST', url: '/owners/o-1/pets', payload: { name: 'Rex' } })
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json(), { params: { ownerId: 'o-1' }, body: { name: 'Rex' } })
      const doc = (await app.inject({ url: '/openapi.json' })).json() as Json
      const op = doc.paths['/owners/{ownerId}/pets'].post
      assert.deepEqual(
        op.parameters.map((p: Json) => [p.name, p.in, p.required]),
        [['ownerId', 'path', true]],
      )
      const body = op.requestBody.content['application/json'].schema
      assert.deepEqual(Object.keys(body.properties), ['name'])
      assert.deepEqual(body.required, ['name'])
    })

    test('the auth routes keep the gateway’s behaviour in their own context', async () => {
      backend.requests.length = 0
      const bytes = '{"email":"a@example.com",  "password":"secret123"}'
      const ok = await app.inject({
        method: 'POST',
        url: '/auth/token?grant_type=password',
        headers: { 'content-type': 'application/json' },
        payload: bytes,
      })
      assert.equal(ok.statusCode, 200)
      assert.equal(backend.requests.at(-1)?.body.toString(), bytes, 'the exact bytes are forwarded')
      const bad = await app.inject({
        method: 'POST',
        url: '/auth/signup',
        payload: { email: 'x', password: 'secret123' },
      })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().error_code, 'validation_failed')
      const text = await app.inject({
        method: 'POST',
        url: '/auth/token',
        headers: { 'content-type': 'text/plain' },
        payload: 'x',
      })
      assert.equal(text.json().error_code, 'unsupported_media_type')
      assert.equal((await app.inject({ url: '/auth/admin/users' })).json().error_code, 'not_found')
      assert.equal(backend.requests.length, 1)
    })

    test('the instance carries the plugin state, and the document lists both kinds of route', async () => {
      assert.equal(app.authgate.config.prefix, '/auth')
      assert.ok(app.authgate.forwarder)
      const doc = (await app.inject({ url: '/openapi.json' })).json() as Json
      assert.ok(doc.paths['/auth/token']?.post)
      assert.ok(doc.paths['/pets']?.post)
    })
  })
}

userRouteSuite('buildApp: user routes added to the service', async (url) => {
  const app = await buildApp({ rateLimit: false, config: { backendUrl: parseBackendUrl('test', url) } })
  addUserRoutes(app)
  return app
})

userRouteSuite("authgate registered on the application's own Fastify instance", async (url) => {
  const app = Fastify()
  const registry = createRegistry(app)
  addUserRoutes(app)
  await app.register(authgate, { rateLimit: false, config: { backendUrl: parseBackendUrl('test', url) } })
  registerDocs(app, registry)
  return app
})

test('authgate is declared as a named Fastify 5 plugin and refuses a second registration', async () => {
  const meta = (authgate as unknown as Record<symbol, { name: string; fastify: string }>)[Symbol.for('plugin-meta')]
  assert.equal(meta?.name, 'authgate')
  assert.equal(meta?.fastify, '5.x')
  const app = Fastify()
  try {
    await app.register(authgate, { rateLimit: false })
    await assert.rejects(
      async () => {
        await app.register(authgate, { rateLimit: false })
        await app.ready()
      },
      (err: Error & { code?: string }) => err.code === 'FST_ERR_DEC_ALREADY_PRESENT' && /authgate/.test(err.message),
    )
  } finally {
    await app.close()
  }
})

test('buildOpenApiDocument splits in-tagged fields of entries built by hand the same way', () => {
  const doc = buildOpenApiDocument([
    {
      methods: ['POST'],
      url: '/things/:id',
      schema: {
        body: Type.Object({ id: Type.String({ in: 'path' }), name: Type.String() }) as unknown as Json,
      },
    },
  ]) as Json
  const op = doc.paths['/things/{id}'].post
  assert.deepEqual(
    op.parameters.map((p: Json) => p.name),
    ['id'],
  )
  assert.deepEqual(Object.keys(op.requestBody.content['application/json'].schema.properties), ['name'])
})

describe('an option nobody reads is refused, named as given', () => {
  const refusal = async (options: object, option: string, message: RegExp) => {
    const app = Fastify()
    try {
      await assert.rejects(
        async () => {
          await app.register(authgate, options as never)
          await app.ready()
        },
        (err: Error) => err instanceof AuthgateConfigError && err.option === option && message.test(err.message),
      )
    } finally {
      await app.close()
    }
  }

  test('a service option given to the plugin: config.port', () =>
    refusal({ rateLimit: false, config: { port: 1 } }, 'config.port', /service's option/))

  test('a misspelled core option, with the one meant', () =>
    refusal({ rateLimit: false, config: { prefx: '/auth' } }, 'config.prefx', /did you mean config\.prefix\?/))

  test('a misspelled plugin option, with the one meant', () =>
    refusal({ rateLimits: false }, 'rateLimits', /did you mean rateLimit\?/))

  test("Fastify's register prefix, which would not apply", () =>
    refusal({ rateLimit: false, prefix: '/auth' }, 'prefix', /config\.prefix/))

  test('buildApp refuses its own unknown options and unknown core options', async () => {
    await assert.rejects(
      buildApp({ rateLimit: false, refuseEarli: true } as never),
      (err: Error) =>
        err instanceof AuthgateConfigError &&
        err.option === 'refuseEarli' &&
        /did you mean refuseEarly\?/.test(err.message),
    )
    await assert.rejects(
      buildApp({ rateLimit: false, config: { prot: 1 } as never }),
      (err: Error) =>
        err instanceof AuthgateConfigError && err.option === 'prot' && /did you mean port\?/.test(err.message),
    )
  })

  test('what the plugin reads is accepted, Fastify’s own register options included', async () => {
    const app = Fastify()
    await app.register(authgate, { rateLimit: false, logLevel: 'warn', config: { prefix: '/id' } } as never)
    await app.ready()
    assert.equal(app.authgate.config.prefix, '/id')
    await app.close()
  })
})
