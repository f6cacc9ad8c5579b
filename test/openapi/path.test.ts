import assert from 'node:assert/strict'
import { test } from 'node:test'
import { toOpenApiPath } from '../../src/openapi/path.ts'

test('Fastify path syntax becomes OpenAPI templates with {name} segments', () => {
  const cases: Array<[string, string, string[]]> = [
    ['/items', '/items', []],
    ['/items/:id', '/items/{id}', ['id']],
    ['/users/:userId/posts/:id', '/users/{userId}/posts/{id}', ['userId', 'id']],
    ['/files/:name.:ext', '/files/{name}.{ext}', ['name', 'ext']],
    ['/range/:from-:to', '/range/{from}-{to}', ['from', 'to']],
    ['/items/:id?', '/items/{id}', ['id']],
    ['/static/*', '/static/{wildcard}', ['wildcard']],
    ['/time/10::30', '/time/10:30', []],
    ['', '/', []],
  ]
  for (const [fastify, openapi, names] of cases) {
    const out = toOpenApiPath(fastify)
    assert.equal(out.path, openapi, fastify)
    assert.deepEqual(
      out.params.map((p) => p.name),
      names,
      fastify,
    )
  }
})

test('a parameter regex is kept as the pattern and dropped from the template', () => {
  const out = toOpenApiPath('/orders/:id(^\\d+$)/lines/:n(^(?:[0-9]{1,3})$)')
  assert.equal(out.path, '/orders/{id}/lines/{n}')
  assert.deepEqual(out.params, [
    { name: 'id', key: 'id', pattern: '^\\d+$' },
    { name: 'n', key: 'n', pattern: '^(?:[0-9]{1,3})$' },
  ])
})

test("the wildcard maps back to Fastify's params['*']", () => {
  assert.deepEqual(toOpenApiPath('/x/*').params, [{ name: 'wildcard', key: '*' }])
})
