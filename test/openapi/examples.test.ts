import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addGeneratedExamples, exampleFor } from '../../src/openapi/examples.ts'

test('a declared example wins: examples, example, default, const, enum', () => {
  assert.equal(exampleFor({ type: 'string', examples: ['a', 'b'] }, 'email'), 'a')
  assert.equal(exampleFor({ type: 'string', example: 'x' }), 'x')
  assert.equal(exampleFor({ type: 'integer', default: 7 }), 7)
  assert.equal(exampleFor({ const: 'fixed' }), 'fixed')
  assert.equal(exampleFor({ enum: ['red', 'green'] }), 'red')
})

test('values by name: e-mail, timestamps, ids, URLs, phone, names', () => {
  const s = { type: 'string' }
  assert.equal(exampleFor(s, 'email'), 'user@example.com')
  assert.equal(exampleFor(s, 'billingEmail'), 'user@example.com')
  for (const n of ['created_at', 'updated_at', 'expiresAt', 'deleted_at'])
    assert.match(String(exampleFor(s, n)), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/, n)
  assert.match(String(exampleFor(s, 'user_id')), /^[0-9a-f]{8}-/)
  assert.match(String(exampleFor(s, 'redirect_url')), /^https:\/\//)
  assert.match(String(exampleFor(s, 'phone')), /^\+\d+$/)
  assert.equal(exampleFor(s, 'first_name'), 'Jane')
  assert.equal(exampleFor({ type: 'integer' }, 'expires_in'), 3600)
  assert.equal(
    exampleFor({ type: 'integer' }, 'created_at'),
    1705311000,
    'an integer timestamp is seconds since the epoch',
  )
})

test('values by format override the name', () => {
  assert.equal(exampleFor({ type: 'string', format: 'email' }, 'contact'), 'user@example.com')
  assert.equal(exampleFor({ type: 'string', format: 'uri' }, 'x'), 'https://example.com')
  assert.equal(exampleFor({ type: 'string', format: 'date' }, 'created_at'), '2024-01-15')
  assert.equal(exampleFor({ type: 'string', format: 'ipv4' }), '192.0.2.10')
})

test('constraints are respected or no example is given', () => {
  assert.equal(exampleFor({ type: 'string', minLength: 10 }, 'x'), 'stringxxxx')
  assert.equal(exampleFor({ type: 'string', maxLength: 3 }, 'x'), 'str')
  assert.equal(
    exampleFor({ type: 'string', format: 'email', maxLength: 5 }),
    undefined,
    'an e-mail cannot be cut short',
  )
  assert.equal(exampleFor({ type: 'string', pattern: '^[0-9]+$' }, 'x'), undefined)
  assert.equal(
    exampleFor({ type: 'string', pattern: '^[0-9]{6}$' }, 'code'),
    '123456',
    'a name-based value that fits is kept',
  )
  assert.equal(exampleFor({ type: 'integer', minimum: 10, maximum: 20 }), 10)
  assert.equal(exampleFor({ type: 'integer', exclusiveMinimum: 1 }), 2)
  assert.equal(exampleFor({ type: 'number', maximum: 1 }, 'ratio'), 0.75)
  assert.equal(exampleFor({ type: 'integer', multipleOf: 5, minimum: 3 }), 5)
  assert.deepEqual(exampleFor({ type: 'array', items: { type: 'string' }, minItems: 2 }, 'email'), [
    'user@example.com',
    'user@example.com',
  ])
  assert.equal(exampleFor({ type: 'array', items: { type: 'string' }, minItems: 2, uniqueItems: true }), undefined)
})

test('objects, unions and references', () => {
  assert.deepEqual(exampleFor({ type: 'object', properties: { email: { type: 'string' }, n: { type: 'integer' } } }), {
    email: 'user@example.com',
    n: 1,
  })
  assert.equal(
    exampleFor({ anyOf: [{ type: 'null' }, { type: 'string', format: 'uuid' }] }),
    '3fa85f64-5717-4562-b3fc-2c963f66afa6',
  )
  assert.equal(exampleFor({ type: ['string', 'null'] }, 'email'), 'user@example.com')
  assert.equal(exampleFor({ $ref: '#/components/schemas/X' }), undefined)
  assert.equal(exampleFor({}), undefined, 'an unconstrained schema gets no invented value')
})

test('addGeneratedExamples annotates leaf fields only and keeps declared examples', () => {
  const schema = {
    type: 'object',
    properties: {
      email: { type: 'string' },
      kept: { type: 'string', examples: ['mine'] },
      nested: { type: 'object', properties: { created_at: { type: 'string' } } },
      list: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } } } },
      maybe: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
    },
  }
  addGeneratedExamples(schema)
  const p = schema.properties as Record<string, any>
  assert.deepEqual(p.email.examples, ['user@example.com'])
  assert.deepEqual(p.kept.examples, ['mine'])
  assert.equal((schema as Record<string, unknown>).examples, undefined)
  assert.equal(p.nested.examples, undefined)
  assert.equal(p.nested.properties.created_at.examples.length, 1)
  assert.equal(p.list.items.properties.id.examples.length, 1)
  assert.deepEqual(p.maybe.examples, [1])
})
