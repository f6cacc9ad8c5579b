import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Type } from 'typebox'
import { buildOpenApiDocument } from '../../src/docs-server/document.ts'
import { schemaTo30, toOpenApi30 } from '../../src/openapi/openapi30.ts'

test('3.1 schema constructs become their 3.0 equivalents', () => {
  const cases: Array<[unknown, unknown]> = [
    [{ type: ['string', 'null'] }, { type: 'string', nullable: true }],
    [{ type: ['string', 'integer'] }, { anyOf: [{ type: 'string' }, { type: 'integer' }] }],
    [
      { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }], description: 'd' },
      { description: 'd', type: 'string', minLength: 1, nullable: true },
    ],
    [
      { anyOf: [{ $ref: '#/components/schemas/A' }, { type: 'null' }] },
      { allOf: [{ $ref: '#/components/schemas/A' }], nullable: true },
    ],
    [
      { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] },
      { anyOf: [{ type: 'string' }, { type: 'integer' }], nullable: true },
    ],
    [{ type: 'null' }, { enum: [null], nullable: true }],
    [
      { type: 'string', examples: ['a', 'b'] },
      { type: 'string', example: 'a' },
    ],
    [
      { type: 'string', const: 'x' },
      { type: 'string', enum: ['x'] },
    ],
    [
      { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 10 },
      { type: 'integer', minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: true },
    ],
    [
      { $ref: '#/components/schemas/A', description: 'why' },
      { allOf: [{ $ref: '#/components/schemas/A' }], description: 'why' },
    ],
    [
      { type: 'object', patternProperties: { '^.*$': { type: 'string' } } },
      { type: 'object', additionalProperties: { type: 'string' } },
    ],
    [
      { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] },
      { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
    ],
    [{ type: 'array' }, { type: 'array', items: {} }],
    [
      { type: 'string', contentEncoding: 'base64' },
      { type: 'string', format: 'byte' },
    ],
    [
      {
        $schema: 'x',
        $id: 'y',
        $defs: {},
        if: {},
        then: {},
        type: 'object',
        properties: { a: { type: ['integer', 'null'], examples: [1] } },
      },
      { type: 'object', properties: { a: { type: 'integer', example: 1, nullable: true } } },
    ],
    [true, {}],
    [false, { not: {} }],
  ]
  for (const [input, expected] of cases) assert.deepEqual(schemaTo30(input), expected, JSON.stringify(input))
})

test('the whole document: version, info, and every schema position converted; the 3.1 document is untouched', () => {
  const doc31 = buildOpenApiDocument(
    [
      {
        methods: ['POST'],
        url: '/x/:id',
        schema: {
          params: Type.Object({ id: Type.Union([Type.String(), Type.Null()]) }),
          body: Type.Object({ a: Type.Union([Type.Integer(), Type.Null()]) }, { title: 'Body' }),
          response: {
            200: {
              headers: { 'X-N': { schema: { type: ['integer', 'null'] } } },
              type: 'object',
              properties: { c: { const: 1 } },
            },
          },
        },
      },
    ],
    { info: { title: 'T', summary: 'S', license: { name: 'MIT', identifier: 'MIT' } } },
  )
  const before = JSON.stringify(doc31)
  const doc30 = toOpenApi30(doc31) as Record<string, any>
  assert.equal(JSON.stringify(doc31), before)
  assert.equal(doc30.openapi, '3.0.3')
  assert.deepEqual(doc30.info, {
    title: 'T',
    version: '1.0.0',
    license: { name: 'MIT', url: 'https://spdx.org/licenses/MIT.html' },
  })
  const op = doc30.paths['/x/{id}'].post
  assert.deepEqual(op.parameters[0].schema, { type: 'string', nullable: true })
  assert.deepEqual(doc30.components.schemas.Body.properties.a, { type: 'integer', nullable: true, example: 1 })
  assert.deepEqual(op.responses['200'].headers['X-N'].schema, { type: 'integer', nullable: true })
  assert.deepEqual(op.responses['200'].content['application/json'].schema.properties.c, { enum: [1] })
  assert.equal(JSON.stringify(doc30).includes('"examples"'), false)
  assert.equal(JSON.stringify(doc30).includes('"const"'), false)
  assert.equal(JSON.stringify(doc30).includes('"type":"null"'), false)
})
