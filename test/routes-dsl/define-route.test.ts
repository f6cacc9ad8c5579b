import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { Type } from 'typebox'
import { buildOpenApiDocument } from '../../src/docs-server/document.ts'
import { defineRoute, inForm, inHeader, inPath, inQuery } from '../../src/routes-dsl/index.ts'
import { createRegistry } from '../../src/openapi/registry.ts'
import { withRules } from '../../src/routes-dsl/rules.ts'

type Json = Record<string, any>

// Fastify's default Ajv is strict: it would refuse an unknown `in` keyword, so these tests also
// prove that the tags never reach Fastify.
async function appWith(...routes: Array<ReturnType<typeof defineRoute>>) {
  const app = Fastify()
  const registry = createRegistry(app)
  for (const r of routes) app.route(r as never)
  await app.ready()
  return { app, doc: buildOpenApiDocument(registry.entries()) as Json }
}

test('a request type is split into params, querystring and headers; Fastify validates each part', async () => {
  const seen: unknown[] = []
  const { app, doc } = await appWith(
    defineRoute({
      method: 'GET',
      url: '/items/:id',
      request: Type.Object({
        id: inPath(Type.String({ minLength: 3 })),
        limit: inQuery(Type.Optional(Type.Integer({ minimum: 1, maximum: 10 }))),
        'x-tenant': inHeader(Type.String()),
      }),
      handler: async (request) => {
        seen.push([request.params.id, request.query.limit, request.headers['x-tenant']])
        return { ok: true }
      },
    }),
  )
  assert.equal((await app.inject({ url: '/items/abc?limit=5', headers: { 'x-tenant': 't1' } })).statusCode, 200)
  assert.deepEqual(seen, [['abc', 5, 't1']])
  assert.equal((await app.inject({ url: '/items/abc?limit=50', headers: { 'x-tenant': 't1' } })).statusCode, 400)
  assert.equal((await app.inject({ url: '/items/ab', headers: { 'x-tenant': 't1' } })).statusCode, 400)
  assert.equal((await app.inject({ url: '/items/abc' })).statusCode, 400, 'required header missing')
  const op = doc.paths['/items/{id}'].get
  assert.deepEqual(
    op.parameters.map((p: Json) => [p.name, p.in, p.required]),
    [
      ['id', 'path', true],
      ['limit', 'query', false],
      ['x-tenant', 'header', true],
    ],
  )
  assert.equal(op.requestBody, undefined)
  await app.close()
})

test('untagged fields are the JSON body; a type with only tagged fields has no body', async () => {
  const { app, doc } = await appWith(
    defineRoute({
      method: 'PUT',
      url: '/items/:id',
      request: Type.Object(
        { id: inPath(Type.String()), name: Type.String({ minLength: 1 }), note: Type.Optional(Type.String()) },
        { title: 'ItemUpdate' },
      ),
      handler: async (request) => ({ id: request.params.id, name: request.body.name }),
    }),
    defineRoute({
      method: 'POST',
      url: '/items/:id/touch',
      request: Type.Object({ id: inPath(Type.String()), at: inQuery(Type.Optional(Type.String())) }),
      handler: async () => ({}),
    }),
  )
  const put = (body: unknown) => app.inject({ method: 'PUT', url: '/items/7', payload: body as object })
  assert.deepEqual((await put({ name: 'x' })).json(), { id: '7', name: 'x' })
  assert.equal((await put({ name: '' })).statusCode, 400)
  assert.equal((await put({})).statusCode, 400)
  assert.equal(
    (await app.inject({ method: 'POST', url: '/items/7/touch' })).statusCode,
    200,
    'no body schema, no body needed',
  )
  assert.deepEqual(doc.components.schemas.ItemUpdate.required, ['name'])
  assert.deepEqual(Object.keys(doc.components.schemas.ItemUpdate.properties), ['name', 'note'])
  assert.equal(doc.paths['/items/{id}/touch'].post.requestBody, undefined)
  await app.close()
})

test('form fields make an application/x-www-form-urlencoded body; mixing them with JSON fields is refused', () => {
  const route = defineRoute({
    method: 'POST',
    url: '/login',
    request: Type.Object({ username: inForm(Type.String()), password: inForm(Type.String()) }),
    handler: async () => ({}),
  })
  assert.deepEqual(route.schema?.consumes, ['application/x-www-form-urlencoded'])
  assert.deepEqual(Object.keys((route.schema?.body as Json).properties), ['username', 'password'])
  const doc = buildOpenApiDocument([{ methods: ['POST'], url: '/login', schema: route.schema as Json }]) as Json
  assert.deepEqual(Object.keys(doc.paths['/login'].post.requestBody.content), ['application/x-www-form-urlencoded'])
  assert.throws(
    () =>
      defineRoute({
        method: 'POST',
        url: '/mixed',
        request: Type.Object({ a: inForm(Type.String()), b: Type.String() }),
        handler: async () => ({}),
      }),
    /cannot mix/,
  )
})

test('GET with body fields is refused with a hint', () => {
  assert.throws(
    () =>
      defineRoute({ method: 'GET', url: '/q', request: Type.Object({ q: Type.String() }), handler: async () => ({}) }),
    /inQuery/,
  )
})

test('Fastify-style separate schemas work too, and metadata reaches the document', async () => {
  const { app, doc } = await appWith(
    defineRoute({
      method: 'POST',
      url: '/things',
      tags: ['Things', 'Management'],
      summary: 'Create a thing',
      description: 'Long text',
      operationId: 'createThing',
      deprecated: true,
      security: [{ bearerAuth: [] }],
      querystring: Type.Object({ dry: Type.Optional(Type.Boolean()) }),
      body: Type.Object({ name: Type.String() }),
      response: Type.Object({ id: Type.String(), name: Type.String() }),
      status: 201,
      responses: [{ status: 409, description: 'Exists already', example: { code: 409, msg: 'taken' } }],
      handler: async (request, reply) => reply.code(201).send({ id: '1', name: request.body.name }),
    }),
  )
  const res = await app.inject({ method: 'POST', url: '/things?dry=true', payload: { name: 'n' } })
  assert.equal(res.statusCode, 201)
  assert.deepEqual(res.json(), { id: '1', name: 'n' })
  const op = doc.paths['/things'].post
  assert.deepEqual(
    [op.summary, op.description, op.operationId, op.deprecated, op.tags],
    ['Create a thing', 'Long text', 'createThing', true, ['Things', 'Management']],
  )
  assert.deepEqual(Object.keys(op.responses), ['201', '400', '401', '403', '409', '500'])
  assert.equal(op.responses['409'].description, 'Exists already')
  assert.equal(op.responses['409'].content['application/json'].schema.properties.msg.type, 'string')
  await app.close()
})

test('an explicit response documented by example does not filter what the handler sends', async () => {
  const { app, doc } = await appWith(
    defineRoute({
      method: 'GET',
      url: '/share',
      responses: [{ status: 200, description: 'A link', example: { url: 'https://x.example/s/1' } }],
      handler: async () => ({ url: 'https://x.example/s/2', expires_in: 60 }),
    }),
  )
  assert.deepEqual((await app.inject('/share')).json(), { url: 'https://x.example/s/2', expires_in: 60 })
  const r = doc.paths['/share'].get.responses['200']
  assert.equal(r.description, 'A link')
  assert.deepEqual(r.content['application/json'].schema, {
    type: 'object',
    properties: { url: { type: 'string', examples: ['https://x.example/s/1'] } },
  })
  await app.close()
})

test('withRules: min, max, len, email, url and default map by type, and Fastify enforces them', async () => {
  const body = Type.Object({
    name: withRules(Type.String(), { min: 2, max: 5, default: 'anon' }),
    code: withRules(Type.String(), { len: 4 }),
    email: withRules(Type.String(), { email: true }),
    site: Type.Optional(withRules(Type.String(), { url: true })),
    tags: withRules(Type.Array(Type.String()), { min: 1, max: 2 }),
    pair: Type.Optional(withRules(Type.Array(Type.Integer()), { len: 2 })),
    age: withRules(Type.Integer(), { min: 18, max: 99, default: 30 }),
  })
  assert.deepEqual(body.required, ['name', 'code', 'email', 'tags', 'age'], 'Optional survives withRules')
  const { app, doc } = await appWith(defineRoute({ method: 'POST', url: '/r', body, handler: async () => ({}) }))
  const ok = {
    name: 'abc',
    code: 'abcd',
    email: 'a@b.co',
    site: 'https://x.example',
    tags: ['t'],
    pair: [1, 2],
    age: 40,
  }
  const post = (patch: Json) => app.inject({ method: 'POST', url: '/r', payload: { ...ok, ...patch } })
  assert.equal((await post({})).statusCode, 200)
  for (const bad of [
    { name: 'a' },
    { name: 'abcdef' },
    { code: 'abc' },
    { email: 'nope' },
    { site: 'not a url' },
    { tags: [] },
    { tags: ['a', 'b', 'c'] },
    { pair: [1] },
    { age: 17 },
    { age: 100 },
  ]) {
    assert.equal((await post(bad)).statusCode, 400, JSON.stringify(bad))
  }
  const p = doc.paths['/r'].post.requestBody.content['application/json'].schema.properties
  assert.deepEqual([p.name.minLength, p.name.maxLength, p.name.default], [2, 5, 'anon'])
  assert.deepEqual([p.code.minLength, p.code.maxLength], [4, 4])
  assert.equal(p.email.format, 'email')
  assert.equal(p.site.format, 'uri')
  assert.deepEqual([p.tags.minItems, p.tags.maxItems], [1, 2])
  assert.deepEqual([p.pair.minItems, p.pair.maxItems], [2, 2])
  assert.deepEqual([p.age.minimum, p.age.maximum, p.age.default], [18, 99, 30])
  await app.close()
})

test('withRules refuses rules that do not apply to the type', () => {
  assert.throws(() => withRules(Type.Integer(), { email: true }), /email/)
  assert.throws(() => withRules(Type.Number(), { len: 3 }), /len/)
  assert.throws(() => withRules(Type.Boolean(), { min: 1 }), /min/)
})
