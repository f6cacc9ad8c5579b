import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DEFAULT_TAG_RULES } from '../../src/openapi/conventions.ts'
import { buildDocument } from '../../src/openapi/document.ts'
import type { RouteAccess, RouteEntry, RouteSchema } from '../../src/openapi/types.ts'

type Json = Record<string, any>
const route = (method: string, url: string, schema?: RouteSchema): RouteEntry => ({ methods: [method], url, schema })
const op = (d: Json, path: string, method = 'get'): Json => d.paths[path][method]

const entries = [
  route('GET', '/public', { tags: ['Public'] }),
  route('GET', '/admin', { tags: ['Admin'] }),
  route('GET', '/auth', { tags: ['Auth'] }),
]

test('the generic builder gives no tag a meaning or a description of its own', () => {
  const d = buildDocument(entries) as Json
  assert.deepEqual(op(d, '/public').security, [{ bearerAuth: [] }])
  assert.ok(op(d, '/public').responses['401'])
  assert.equal(op(d, '/admin').responses['403'], undefined)
  assert.deepEqual(d.tags, [{ name: 'Public' }, { name: 'Admin' }, { name: 'Auth' }])
})

test('tag rules and tag descriptions come in as options; descriptions of unused tags are not listed', () => {
  const d = buildDocument(entries, {
    tagRules: DEFAULT_TAG_RULES,
    tagDescriptions: { Auth: 'Sign-in', Unused: 'never shown', constructor: 'x' },
  }) as Json
  assert.deepEqual(op(d, '/public').security, [])
  assert.equal(op(d, '/public').responses['401'], undefined)
  assert.ok(op(d, '/admin').responses['403'])
  assert.deepEqual(d.tags, [{ name: 'Public' }, { name: 'Admin' }, { name: 'Auth', description: 'Sign-in' }])
  const custom = buildDocument([route('GET', '/open', { tags: ['Open'] })], { tagRules: { public: ['Open'] } }) as Json
  assert.deepEqual(op(custom, '/open').security, [])
})

test("a route's own access check is documented as stated, whatever its tags", () => {
  const access: RouteAccess = {
    security: [{}, { bearerAuth: [] }],
    errors: { '401': { headers: { 'WWW-Authenticate': { schema: { type: 'string' } } } }, '403': {} },
  }
  const d = buildDocument([route('GET', '/checked', { tags: ['Public'], access })], {
    tagRules: DEFAULT_TAG_RULES,
  }) as Json
  const o = op(d, '/checked')
  assert.deepEqual(o.security, [{}, { bearerAuth: [] }])
  assert.deepEqual(Object.keys(o.responses), ['200', '400', '401', '403', '500'])
  assert.deepEqual(Object.keys(o.responses['401'].headers), ['WWW-Authenticate'])
  assert.deepEqual(o.responses['403'].content['application/json'].schema, {
    $ref: '#/components/schemas/ErrorResponse',
  })
  // A security the route states itself still wins.
  const stated = buildDocument([route('GET', '/s', { security: [{ apiKey: [] }], access })]) as Json
  assert.deepEqual(op(stated, '/s').security, [{ apiKey: [] }])
})
