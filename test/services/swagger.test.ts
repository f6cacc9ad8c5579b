import assert from 'node:assert/strict'
import { test } from 'node:test'
import { postgrestSwagger } from '../../e2e/support/service-stand-ins.ts'
import { convertPostgrestSwagger, mergeRestPart } from '../../src/services/swagger.ts'

const convert = (swagger: unknown) => convertPostgrestSwagger(swagger, { prefix: '/rest/v1', tag: 'Database' })

test("PostgREST's Swagger 2.0 becomes 3.1 paths under the client's prefix, one tag, components of their own", () => {
  const part = convert(postgrestSwagger())
  assert.deepEqual(Object.keys(part.paths), ['/rest/v1/todos'], 'the description itself (/) is not an operation')
  const todos = part.paths['/rest/v1/todos'] as Record<string, any>
  assert.deepEqual(Object.keys(todos).sort(), ['delete', 'get', 'patch', 'post'])
  assert.deepEqual(todos.get.tags, ['Database'])
  assert.equal(todos.get.summary, 'Things to do')
  assert.equal(todos.get.operationId, 'restGetTodos')
  assert.deepEqual(todos.get.parameters[0], { $ref: '#/components/parameters/rest.rowFilter.todos.id' })
  assert.deepEqual(todos.get.responses['200'].content['application/json'].schema, {
    type: 'array',
    items: { $ref: '#/components/schemas/rest.todos' },
  })
  assert.deepEqual(todos.get.responses['206'], { description: 'Partial Content' })
  // Errors are documented in the shape PostgREST and authgate's refusals share.
  assert.deepEqual(todos.post.responses['4XX'].content['application/json'].schema, {
    $ref: '#/components/schemas/rest.Error',
  })
  assert.deepEqual((part.schemas['rest.Error'] as Record<string, any>).required, ['code', 'message'])
  // A body parameter is a request body, every media type PostgREST consumes.
  assert.deepEqual(todos.post.requestBody, { $ref: '#/components/requestBodies/rest.body.todos' })
  assert.deepEqual(part.requestBodies['rest.body.todos'], {
    description: 'todos',
    required: false,
    content: Object.fromEntries(
      [
        'application/json',
        'application/vnd.pgrst.object+json;nulls=stripped',
        'application/vnd.pgrst.object+json',
        'text/csv',
      ].map((t) => [t, { schema: { $ref: '#/components/schemas/rest.todos' } }]),
    ),
  })
  assert.equal(todos.patch.parameters.length, 4, 'three row filters and Prefer; the body is not a parameter')
  // Non-body parameters take their type into a schema.
  assert.deepEqual(part.parameters['rest.rangeUnit'], {
    name: 'Range-Unit',
    in: 'header',
    description: 'Limiting and Pagination',
    required: false,
    schema: { type: 'string', default: 'items' },
  })
  assert.deepEqual(part.parameters['rest.preferCount'], {
    name: 'Prefer',
    in: 'header',
    description: 'Preference',
    required: false,
    schema: { type: 'string', enum: ['count=none'] },
  })
  assert.deepEqual((part.schemas['rest.todos'] as Record<string, any>).required, ['id', 'title'])
  assert.match(part.tag.description, /PostgREST 12\.2\.3/)
})

test('functions: inline parameters, inline bodies, a summary and an id where PostgREST gives none', () => {
  const swagger = postgrestSwagger() as Record<string, any>
  swagger.paths['/rpc/add_them'] = {
    get: {
      parameters: [{ format: 'integer', in: 'query', name: 'a', required: true, type: 'integer' }],
      responses: { '200': { description: 'OK' } },
      tags: ['(rpc) add_them'],
    },
    post: {
      parameters: [
        {
          in: 'body',
          name: 'args',
          required: true,
          schema: { properties: { a: { format: 'integer', type: 'integer' } }, required: ['a'], type: 'object' },
        },
        { $ref: '#/parameters/preferParams' },
      ],
      responses: { '200': { description: 'OK' } },
      tags: ['(rpc) add_them'],
    },
  }
  const rpc = convert(swagger).paths['/rest/v1/rpc/add_them'] as Record<string, any>
  assert.equal(rpc.get.summary, 'Call add_them')
  assert.equal(rpc.get.operationId, 'restGetRpcAddThem')
  assert.deepEqual(rpc.get.parameters, [
    { name: 'a', in: 'query', required: true, schema: { type: 'integer', format: 'integer' } },
  ])
  assert.equal(rpc.post.requestBody.required, true)
  assert.deepEqual(rpc.post.requestBody.content['text/csv'].schema.required, ['a'])
})

test('anything but a Swagger 2.0 document is refused; merging adds and never replaces', () => {
  assert.throws(() => convert({ openapi: '3.0.0', paths: {} }), /not a Swagger 2\.0 document/)
  assert.throws(() => convert('<html>'), /not a Swagger 2\.0 document/)
  const part = convert(postgrestSwagger())
  const doc = {
    openapi: '3.1.0',
    paths: { '/auth/signup': { post: {} } },
    components: { schemas: { Todo: {} }, securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
    tags: [{ name: 'Auth' }],
  }
  const merged = mergeRestPart(doc, part)
  assert.deepEqual(Object.keys(merged.paths), ['/auth/signup', '/rest/v1/todos'])
  assert.deepEqual(Object.keys(merged.components.schemas as object), ['Todo', 'rest.Error', 'rest.todos'])
  assert.deepEqual(merged.components.securitySchemes, { bearerAuth: { type: 'http', scheme: 'bearer' } })
  assert.deepEqual(
    merged.tags.map((t) => t.name),
    ['Auth', 'Database'],
  )
  assert.deepEqual(Object.keys(doc.paths), ['/auth/signup'], 'the document given is not changed')
})
