import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Type } from 'typebox'
import { ErrorSchema } from '../../src/errors.ts'
import { buildOpenApiDocument } from '../../src/docs-server/document.ts'
import type { RouteEntry, RouteSchema } from '../../src/openapi/types.ts'

type Json = Record<string, any>
const route = (method: string, url: string, schema?: RouteSchema, config?: Record<string, unknown>): RouteEntry => ({
  methods: [method],
  url,
  schema,
  config,
})
const doc = (...entries: RouteEntry[]): Json => buildOpenApiDocument(entries)
const op = (d: Json, path: string, method: string): Json => d.paths[path][method]
const ERROR_REF = { $ref: '#/components/schemas/ErrorResponse' }

/** Every $ref in the document points at something that exists. */
function assertNoDanglingRefs(d: Json): void {
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk)
    if (v && typeof v === 'object') {
      const ref = (v as Json).$ref
      if (typeof ref === 'string') {
        assert.match(ref, /^#\/components\/schemas\/[A-Za-z0-9._-]+/, `reference ${ref}`)
        const name = ref.split('/')[3]!
        assert.ok(d.components.schemas[name], `reference ${ref} resolves`)
      }
      Object.values(v).forEach(walk)
    }
  }
  walk(d)
}

test('header defaults: OpenAPI 3.1, title "API Documentation", version 1.0.0, a server, bearerAuth', () => {
  const d = doc()
  assert.equal(d.openapi, '3.1.0')
  assert.deepEqual(d.info, { title: 'API Documentation', version: '1.0.0' })
  assert.deepEqual(d.servers, [{ url: '/', description: 'This server' }])
  assert.deepEqual(d.components.securitySchemes.bearerAuth, {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'The access token of a signed-in user: `Authorization: Bearer <ACCESS_TOKEN>`.',
  })
})

test('generator options: info with contact, servers, additional security schemes, tag descriptions', () => {
  const d: Json = buildOpenApiDocument([route('GET', '/k', { tags: ['Keys'], security: [{ apiKey: [] }] })], {
    info: {
      title: 'Shop',
      version: '2.3.4',
      description: 'The shop API',
      contact: { name: 'Ops', email: 'ops@example.com' },
    },
    servers: [{ url: 'https://api.example.com', description: 'Production' }, { url: 'http://localhost:8080' }],
    securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
    tags: [{ name: 'Keys', description: 'API keys' }],
  })
  assert.deepEqual(d.info, {
    title: 'Shop',
    version: '2.3.4',
    description: 'The shop API',
    contact: { name: 'Ops', email: 'ops@example.com' },
  })
  assert.deepEqual(d.servers, [
    { url: 'https://api.example.com', description: 'Production' },
    { url: 'http://localhost:8080' },
  ])
  assert.deepEqual(d.components.securitySchemes.apiKey, { type: 'apiKey', in: 'header', name: 'X-API-Key' })
  assert.ok(d.components.securitySchemes.bearerAuth, 'bearerAuth stays')
  assert.deepEqual(d.tags, [{ name: 'Keys', description: 'API keys' }])
  assert.deepEqual(op(d, '/k', 'get').security, [{ apiKey: [] }])
})

test('path items keep {id} segments; path parameters are always required', () => {
  const d = doc(
    route('GET', '/items/:id', { params: Type.Object({ id: Type.Optional(Type.String({ description: 'Item id' })) }) }),
    route('DELETE', '/users/:user/keys/:key'),
  )
  const [id] = op(d, '/items/{id}', 'get').parameters
  assert.equal(id.in, 'path')
  assert.equal(id.required, true, 'required even though the schema made it optional')
  assert.equal(id.description, 'Item id')
  const params = op(d, '/users/{user}/keys/{key}', 'delete').parameters
  assert.deepEqual(
    params.map((p: Json) => [p.name, p.in, p.required, p.schema]),
    [
      ['user', 'path', true, { type: 'string' }],
      ['key', 'path', true, { type: 'string' }],
    ],
  )
})

test('query parameters are required only when the schema requires them; header parameters are documented', () => {
  const d = doc(
    route('GET', '/search', {
      querystring: Type.Object({
        q: Type.String({ description: 'Search text', examples: ['socks'] }),
        page: Type.Optional(Type.Integer({ minimum: 1 })),
      }),
      headers: Type.Object({
        'x-tenant': Type.String({ description: 'Tenant' }),
        'x-trace': Type.Optional(Type.String()),
        authorization: Type.String(),
      }),
    }),
  )
  const params = op(d, '/search', 'get').parameters as Json[]
  const byName = Object.fromEntries(params.map((p) => [p.name, p]))
  assert.deepEqual(
    [byName.q.in, byName.q.required, byName.q.description, byName.q.example],
    ['query', true, 'Search text', 'socks'],
  )
  assert.deepEqual(
    [byName.page.in, byName.page.required, byName.page.schema],
    ['query', false, { type: 'integer', minimum: 1 }],
  )
  assert.deepEqual(
    [byName['x-tenant'].in, byName['x-tenant'].required, byName['x-tenant'].description],
    ['header', true, 'Tenant'],
  )
  assert.equal(byName['x-trace'].required, false)
  // OpenAPI: an Authorization header parameter "SHALL be ignored"; the security requirement describes it.
  assert.equal(byName.authorization, undefined)
})

test('request bodies on POST, PUT and PATCH only, from the body schema', () => {
  const body = Type.Object({ name: Type.String() })
  const d = doc(
    route('POST', '/a', { body }),
    route('PUT', '/b', { body }),
    route('PATCH', '/c', { body }),
    route('DELETE', '/d', { body }),
  )
  for (const [p, m] of [
    ['/a', 'post'],
    ['/b', 'put'],
    ['/c', 'patch'],
  ] as const) {
    const rb = op(d, p, m).requestBody
    assert.equal(rb.required, true)
    assert.deepEqual(rb.content['application/json'].schema.properties.name.type, 'string')
  }
  assert.equal(op(d, '/d', 'delete').requestBody, undefined)
  assert.equal(op(d, '/a', 'post').requestBody.content['application/x-www-form-urlencoded'], undefined)
})

test('a request type with path/query/header/form tags: tagged fields leave the JSON body; only tagged fields → no body', () => {
  const request = Type.Object({
    id: Type.String({ in: 'path', description: 'Item id' }),
    verbose: Type.Optional(Type.Boolean({ in: 'query' })),
    'x-tenant': Type.String({ in: 'header' }),
    name: Type.String({ minLength: 1 }),
  })
  const d = doc(
    route('PUT', '/items/:id', { body: request }),
    route('POST', '/ping/:id', {
      body: Type.Object({ id: Type.String({ in: 'path' }), q: Type.String({ in: 'query' }) }),
    }),
  )
  const put = op(d, '/items/{id}', 'put')
  assert.deepEqual(
    put.parameters.map((p: Json) => [p.name, p.in, p.required]),
    [
      ['id', 'path', true],
      ['verbose', 'query', false],
      ['x-tenant', 'header', true],
    ],
  )
  const bodySchema = put.requestBody.content['application/json'].schema
  assert.deepEqual(Object.keys(bodySchema.properties), ['name'])
  assert.deepEqual(bodySchema.required, ['name'])
  assert.equal(
    JSON.stringify(d).includes('"in":"path"') && JSON.stringify(bodySchema).includes('"in"'),
    false,
    'no `in` keyword left in schemas',
  )
  assert.equal(op(d, '/ping/{id}', 'post').requestBody, undefined)
  assert.deepEqual(
    op(d, '/ping/{id}', 'post').parameters.map((p: Json) => [p.name, p.in, p.required]),
    [
      ['id', 'path', true],
      ['q', 'query', true],
    ],
  )
})

test('fields tagged form are documented as an application/x-www-form-urlencoded body', () => {
  const d = doc(
    route('POST', '/login', {
      body: Type.Object({ username: Type.String({ in: 'form' }), password: Type.String({ in: 'form' }) }),
    }),
  )
  const rb = op(d, '/login', 'post').requestBody
  assert.deepEqual(Object.keys(rb.content), ['application/x-www-form-urlencoded'])
  assert.deepEqual(Object.keys(rb.content['application/x-www-form-urlencoded'].schema.properties), [
    'username',
    'password',
  ])
})

test('schema.consumes lists the request media types', () => {
  const d = doc(
    route('POST', '/token', {
      body: Type.Object({ grant_type: Type.String() }),
      consumes: ['application/json', 'application/x-www-form-urlencoded'],
    }),
  )
  assert.deepEqual(Object.keys(op(d, '/token', 'post').requestBody.content), [
    'application/json',
    'application/x-www-form-urlencoded',
  ])
})

test('the response type becomes the 200 response; 400 and 500 always carry the standard error schema', () => {
  const d = doc(
    route('GET', '/me', { tags: ['Public'], response: { 200: Type.Object({ name: Type.String() }) } }),
    route('GET', '/bare', { tags: ['Public'] }),
  )
  const r = op(d, '/me', 'get').responses
  assert.deepEqual(Object.keys(r), ['200', '400', '500'])
  assert.equal(r['200'].content['application/json'].schema.properties.name.type, 'string')
  for (const s of ['400', '500']) assert.deepEqual(r[s].content['application/json'].schema, ERROR_REF)
  assert.deepEqual(Object.keys(op(d, '/bare', 'get').responses), ['200', '400', '500'])
  const { $id: _id, ...errorSchema } = ErrorSchema
  assert.deepEqual(d.components.schemas.ErrorResponse, JSON.parse(JSON.stringify(errorSchema)))
})

test('401 unless tagged Public; 403 when tagged Admin or Management', () => {
  const d = doc(
    route('GET', '/public', { tags: ['Public'] }),
    route('GET', '/private', { tags: ['Items'] }),
    route('GET', '/untagged'),
    route('GET', '/admin', { tags: ['Admin'] }),
    route('GET', '/mgmt', { tags: ['Items', 'Management'] }),
    route('GET', '/public-admin', { tags: ['Public', 'Admin'] }),
  )
  const codes = (p: string) => Object.keys(op(d, p, 'get').responses)
  assert.deepEqual(codes('/public'), ['200', '400', '500'])
  assert.deepEqual(codes('/private'), ['200', '400', '401', '500'])
  assert.deepEqual(codes('/untagged'), ['200', '400', '401', '500'])
  assert.deepEqual(codes('/admin'), ['200', '400', '401', '403', '500'])
  assert.deepEqual(codes('/mgmt'), ['200', '400', '401', '403', '500'])
  assert.deepEqual(codes('/public-admin'), ['200', '400', '403', '500'])
  for (const s of ['401', '403'])
    assert.deepEqual(op(d, '/admin', 'get').responses[s].content['application/json'].schema, ERROR_REF)
})

test('bearerAuth is required on every operation not tagged Public, whatever the route does at run time', () => {
  const d = doc(
    route('GET', '/public', { tags: ['Public'] }),
    route('GET', '/private', { tags: ['Items'] }),
    route('GET', '/untagged'),
  )
  assert.deepEqual(op(d, '/public', 'get').security, [])
  assert.deepEqual(op(d, '/private', 'get').security, [{ bearerAuth: [] }])
  assert.deepEqual(op(d, '/untagged', 'get').security, [{ bearerAuth: [] }])
})

test('a route stating schema.security is documented verbatim, with 401 exactly when it requires credentials (D12)', () => {
  const d = doc(
    route('GET', '/open', { tags: ['Auth'], security: [] }),
    route('GET', '/user', { tags: ['Auth'], security: [{ bearerAuth: [] }] }),
    route('GET', '/key', { tags: ['Public'], security: [{ apiKey: [] }] }),
    route('GET', '/optional', { tags: ['Auth'], security: [{}, { bearerAuth: [] }] }),
  )
  assert.deepEqual(op(d, '/open', 'get').security, [])
  assert.equal(op(d, '/open', 'get').responses['401'], undefined, 'tagged Auth, but stated public: no 401')
  assert.deepEqual(op(d, '/user', 'get').security, [{ bearerAuth: [] }])
  assert.ok(op(d, '/user', 'get').responses['401'])
  assert.deepEqual(op(d, '/key', 'get').security, [{ apiKey: [] }])
  assert.ok(op(d, '/key', 'get').responses['401'], 'tagged Public, but stated to need a key')
  assert.ok(op(d, '/optional', 'get').responses['401'])
})

test('an explicit response (status, description, example) replaces the generated one; its schema comes from the example', () => {
  const d = doc(
    route('GET', '/share', {
      response: {
        200: {
          description: 'A share link',
          examples: [
            { url: 'https://x.example/s/1', ttl: 60, tags: ['a'], owner: { id: 7 }, ok: true, ratio: 0.5, gone: null },
          ],
        },
        400: { description: 'Bad link', example: { code: 400, msg: 'bad' } },
      },
    }),
  )
  const r = op(d, '/share', 'get').responses
  assert.equal(r['200'].description, 'A share link')
  assert.deepEqual(r['200'].content['application/json'].schema, {
    type: 'object',
    properties: {
      url: { type: 'string', examples: ['https://x.example/s/1'] },
      ttl: { type: 'integer', examples: [60] },
      tags: { type: 'array', items: { type: 'string', examples: ['a'] } },
      owner: { type: 'object', properties: { id: { type: 'integer', examples: [7] } } },
      ok: { type: 'boolean', examples: [true] },
      ratio: { type: 'number', examples: [0.5] },
      gone: { type: 'null' },
    },
  })
  assert.equal(r['400'].description, 'Bad link')
  assert.deepEqual(r['400'].content['application/json'].example, { code: 400, msg: 'bad' })
  assert.equal(r['400'].content['application/json'].schema.properties.code.type, 'integer', 'replaces the standard 400')
})

test('success statuses are the route’s own: 201, 204 without content, redirects with Location, no invented 200', () => {
  const d = doc(
    route('POST', '/items', {
      response: { 201: { description: 'Created', type: 'object', properties: { id: { type: 'string' } } } },
    }),
    route('POST', '/logout', { response: { 204: { description: 'Signed out', type: 'null' } } }),
    route('GET', '/go', { response: { 302: { description: 'To the provider', type: 'null' } } }),
    route('GET', '/back', {
      response: {
        303: {
          description: 'Back',
          headers: { Location: { description: 'Target', schema: { type: 'string', format: 'uri' } } },
        },
      },
    }),
  )
  assert.deepEqual(Object.keys(op(d, '/items', 'post').responses), ['201', '400', '401', '500'])
  const logout = op(d, '/logout', 'post').responses['204']
  assert.deepEqual(logout, { description: 'Signed out' })
  const go = op(d, '/go', 'get').responses
  assert.equal(go['200'], undefined)
  assert.equal(go['302'].content, undefined)
  assert.deepEqual(go['302'].headers.Location.schema, { type: 'string', format: 'uri-reference' })
  assert.deepEqual(op(d, '/back', 'get').responses['303'].headers, {
    Location: { description: 'Target', schema: { type: 'string', format: 'uri' } },
  })
})

test('response headers (429 with Retry-After and RateLimit) and further statuses (502, 504) are documented', () => {
  const rateHeaders = {
    'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer', minimum: 0 } },
    RateLimit: { type: 'string', description: 'Remaining quota' },
  }
  const d = doc(
    route('POST', '/signup', {
      response: {
        200: { type: 'object' },
        429: { ...ErrorSchema, description: 'Slow down', headers: rateHeaders },
        502: { ...ErrorSchema, description: 'Backend unreachable' },
        504: { ...ErrorSchema, description: 'Backend timeout' },
      },
    }),
  )
  const r = op(d, '/signup', 'post').responses
  assert.deepEqual(Object.keys(r), ['200', '400', '401', '429', '500', '502', '504'])
  assert.deepEqual(r['429'].headers, {
    'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer', minimum: 0 } },
    RateLimit: { description: 'Remaining quota', schema: { type: 'string' } },
  })
  for (const s of ['429', '502', '504']) assert.deepEqual(r[s].content['application/json'].schema, ERROR_REF)
  assert.equal(r['502'].description, 'Backend unreachable')
  assert.equal(
    Object.keys(d.components.schemas).filter((n) => n.startsWith('ErrorResponse')).length,
    1,
    'one error component',
  )
})

test('validation rules pass through as constraints: email, url, len, min, max, default on strings, arrays and numbers', () => {
  const body = Type.Object({
    email: Type.String({ format: 'email' }),
    site: Type.String({ format: 'uri' }),
    code: Type.String({ minLength: 6, maxLength: 6 }),
    name: Type.String({ minLength: 2, maxLength: 40, default: 'anon' }),
    tags: Type.Array(Type.String(), { minItems: 1, maxItems: 5, default: ['x'] }),
    age: Type.Integer({ minimum: 18, maximum: 130, default: 30 }),
    ratio: Type.Number({ minimum: 0, maximum: 1 }),
  })
  const d = doc(route('POST', '/p', { body }))
  const props = op(d, '/p', 'post').requestBody.content['application/json'].schema.properties
  assert.equal(props.email.format, 'email')
  assert.equal(props.site.format, 'uri')
  assert.deepEqual([props.code.minLength, props.code.maxLength], [6, 6])
  assert.deepEqual([props.name.minLength, props.name.maxLength, props.name.default], [2, 40, 'anon'])
  assert.deepEqual([props.tags.minItems, props.tags.maxItems, props.tags.default], [1, 5, ['x']])
  assert.deepEqual([props.age.minimum, props.age.maximum, props.age.default], [18, 130, 30])
  assert.deepEqual([props.ratio.minimum, props.ratio.maximum], [0, 1])
})

test('descriptions and examples of fields reach properties and parameters', () => {
  const d = doc(
    route('POST', '/x/:id', {
      params: Type.Object({ id: Type.String({ description: 'The id', examples: ['abc'] }) }),
      body: Type.Object({ note: Type.String({ description: 'A note', examples: ['hello'] }) }),
    }),
  )
  const o = op(d, '/x/{id}', 'post')
  assert.deepEqual([o.parameters[0].description, o.parameters[0].example], ['The id', 'abc'])
  assert.deepEqual(o.requestBody.content['application/json'].schema.properties.note, {
    type: 'string',
    description: 'A note',
    examples: ['hello'],
  })
})

test('examples are generated from name and type where none is given', () => {
  const body = Type.Object({
    email: Type.String(),
    contact: Type.String({ format: 'email' }),
    created_at: Type.String(),
    updated_at: Type.String({ format: 'date-time' }),
    id: Type.String(),
    avatar_url: Type.String(),
    count: Type.Integer({ minimum: 1, maximum: 5 }),
    enabled: Type.Boolean(),
    nickname: Type.String({ maxLength: 3 }),
    status: Type.String({ enum: ['open', 'closed'] }),
    code: Type.String({ pattern: '^[A-Z]{3}$' }),
  })
  const d = doc(route('POST', '/gen/:item_id', { body }))
  const props = op(d, '/gen/{item_id}', 'post').requestBody.content['application/json'].schema.properties
  const ex = (k: string) => props[k].examples?.[0]
  assert.equal(ex('email'), 'user@example.com')
  assert.equal(ex('contact'), 'user@example.com')
  assert.match(ex('created_at'), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
  assert.match(ex('updated_at'), /^\d{4}-\d{2}-\d{2}T/)
  assert.match(ex('id'), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  assert.match(ex('avatar_url'), /^https:\/\//)
  assert.ok(ex('count') >= 1 && ex('count') <= 5)
  assert.equal(ex('enabled'), true)
  assert.ok(ex('nickname').length <= 3)
  assert.equal(props.status.examples, undefined, 'an enum is its own example')
  assert.equal(props.code.examples, undefined, 'no value is invented that the pattern would reject')
  assert.match(op(d, '/gen/{item_id}', 'post').parameters[0].example, /^[0-9a-f-]{36}$/)
})

test('summary, description, deprecated and an explicit operationId are emitted (D13)', () => {
  const d = doc(
    route('GET', '/items', { summary: 'List', description: 'All of them', deprecated: true, operationId: 'listItems' }),
    route('GET', '/plain'),
  )
  const o = op(d, '/items', 'get')
  assert.deepEqual([o.summary, o.description, o.deprecated, o.operationId], ['List', 'All of them', true, 'listItems'])
  const plain = op(d, '/plain', 'get')
  assert.deepEqual(
    [plain.summary, plain.description, plain.deprecated, plain.operationId],
    [undefined, undefined, undefined, 'getPlain'],
  )
})

test('tags are listed in use order with descriptions for Auth, OAuth and Passkey', () => {
  const d = doc(
    route('GET', '/a', { tags: ['Auth'] }),
    route('GET', '/o', { tags: ['OAuth'] }),
    route('GET', '/p', { tags: ['Passkey'] }),
    route('GET', '/t', { tags: ['Todos'] }),
  )
  assert.deepEqual(
    d.tags.map((t: Json) => t.name),
    ['Auth', 'OAuth', 'Passkey', 'Todos'],
  )
  for (const t of d.tags.slice(0, 3)) assert.ok(t.description.length > 10, t.name)
  assert.equal(d.tags[3].description, undefined)
  assert.deepEqual(op(d, '/a', 'get').tags, ['Auth'])
})

test('named schemas ($id or title) become components referenced from every use; no dangling references', () => {
  const Address = Type.Object({ city: Type.String() }, { title: 'Address' })
  const User = Type.Object({ name: Type.String(), home: Address, work: Type.Optional(Address) }, { $id: 'User' })
  const d = doc(
    route('POST', '/users', { body: User, response: { 200: { description: 'Created user', ...User } } }),
    route('GET', '/users/:id', { response: { 200: User } }),
    route('GET', '/addresses', { response: { 200: Type.Array(Address) } }),
  )
  assert.deepEqual(Object.keys(d.components.schemas).sort(), ['Address', 'ErrorResponse', 'User'])
  assert.deepEqual(op(d, '/users', 'post').requestBody.content['application/json'].schema, {
    $ref: '#/components/schemas/User',
  })
  assert.deepEqual(op(d, '/users', 'post').responses['200'].content['application/json'].schema, {
    $ref: '#/components/schemas/User',
  })
  assert.equal(op(d, '/users', 'post').responses['200'].description, 'Created user')
  assert.deepEqual(d.components.schemas.User.properties.home, { $ref: '#/components/schemas/Address' })
  assert.equal(d.components.schemas.User.$id, undefined, '$id would change the base URI of the references inside')
  assertNoDanglingRefs(d)
})

test('different schemas with the same title get distinct component names', () => {
  const d = doc(
    route('POST', '/a', { body: Type.Object({ a: Type.String() }, { title: 'Thing' }) }),
    route('POST', '/b', { body: Type.Object({ b: Type.Integer() }, { title: 'Thing' }) }),
  )
  assert.deepEqual(op(d, '/a', 'post').requestBody.content['application/json'].schema, {
    $ref: '#/components/schemas/Thing',
  })
  assert.deepEqual(op(d, '/b', 'post').requestBody.content['application/json'].schema, {
    $ref: '#/components/schemas/Thing2',
  })
})

test('references to app.addSchema schemas, $defs and recursive TypeBox types resolve to components', () => {
  const Node = Type.Cyclic({ Node: Type.Object({ id: Type.String(), children: Type.Array(Type.Ref('Node')) }) }, 'Node')
  const d: Json = buildOpenApiDocument(
    [
      route('POST', '/pets', { body: { $ref: 'Pet#' }, response: { 200: { type: 'array', items: { $ref: 'Pet#' } } } }),
      route('GET', '/tree', { response: { 200: Node } }),
      route('GET', '/local', {
        response: {
          200: {
            $defs: { Box: { type: 'object', properties: { w: { type: 'number' } } } },
            type: 'object',
            properties: { box: { $ref: '#/$defs/Box' } },
          },
        },
      }),
      route('GET', '/missing', { response: { 200: { type: 'object', properties: { x: { $ref: 'Nowhere#' } } } } }),
    ],
    { sharedSchemas: { Pet: { $id: 'Pet', type: 'object', properties: { name: { type: 'string' } } } } },
  )
  assert.deepEqual(op(d, '/pets', 'post').requestBody.content['application/json'].schema, {
    $ref: '#/components/schemas/Pet',
  })
  assert.deepEqual(op(d, '/pets', 'post').responses['200'].content['application/json'].schema.items, {
    $ref: '#/components/schemas/Pet',
  })
  assert.deepEqual(d.components.schemas.Node.properties.children.items, { $ref: '#/components/schemas/Node' })
  assert.deepEqual(op(d, '/local', 'get').responses['200'].content['application/json'].schema.properties.box, {
    $ref: '#/components/schemas/Box',
  })
  assert.equal(
    op(d, '/missing', 'get').responses['200'].content['application/json'].schema.properties.x.$ref,
    undefined,
  )
  assertNoDanglingRefs(d)
})

test('building the document never changes the route schemas', () => {
  const schema: RouteSchema = {
    tags: ['A'],
    body: Type.Object({ id: Type.String({ in: 'path' }), name: Type.String() }, { title: 'Named' }),
    response: { 200: { description: 'x', ...Type.Object({ created_at: Type.String() }) } },
  }
  const before = JSON.stringify(schema)
  buildOpenApiDocument([route('PUT', '/n/:id', schema)])
  assert.equal(JSON.stringify(schema), before)
})

test('the same routes always give the same document', () => {
  const entries = [
    route('GET', '/items'),
    route('GET', '/items/:id'),
    route('POST', '/items', { body: Type.Object({ email: Type.String() }) }),
  ]
  assert.deepEqual(buildOpenApiDocument(entries), buildOpenApiDocument(entries))
})

test('a multi-method route becomes one operation per method, each with its own id', () => {
  const d = doc({ methods: ['GET', 'POST'], url: '/callback', schema: { tags: ['Auth'] } })
  assert.deepEqual(Object.keys(d.paths['/callback']), ['get', 'post'])
  assert.deepEqual(
    [d.paths['/callback'].get.operationId, d.paths['/callback'].post.operationId],
    ['getCallback', 'postCallback'],
  )
})
