import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { bodyTypeMismatch, typeMismatch } from '../../src/auth/go-types.ts'

const schema = {
  type: 'object',
  properties: {
    email: { type: 'string' },
    phone: { type: ['string', 'null'] },
    password: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    create_user: { type: 'boolean' },
    count: { type: 'integer' },
    data: { type: 'object' },
    factors: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } } } },
    security: { type: 'object', properties: { captcha_token: { type: 'string' } } },
    either: { anyOf: [{ required: ['email'] }, { required: ['phone'] }] },
    gotrue_meta_security: { type: 'object' },
  },
}

describe('a field of another JSON type, as Go decodes the body into a struct', () => {
  test('a value of an admitted type, a null, and an unknown field are no mismatch', () => {
    const body = {
      email: 'a@example.com',
      phone: null,
      password: 'x',
      create_user: false,
      count: 3,
      data: { any: [1, 'two'] },
      factors: [{ id: 'f' }, null],
      security: { captcha_token: 't' },
      either: 5,
      unknown: 5,
    }
    assert.equal(typeMismatch(schema, body), undefined)
  })

  for (const [body, path, got, want] of [
    [{ email: 1 }, 'body/email', 'number', 'string'],
    [{ phone: true }, 'body/phone', 'boolean', 'string'],
    [{ password: 5 }, 'body/password', 'number', 'string'],
    [{ create_user: 'false' }, 'body/create_user', 'string', 'boolean'],
    [{ count: 1.5 }, 'body/count', 'number', 'integer'],
    [{ data: [1] }, 'body/data', 'array', 'object'],
    [{ factors: [{ id: 7 }] }, 'body/factors/0/id', 'number', 'string'],
    [{ security: { captcha_token: {} } }, 'body/security/captcha_token', 'object', 'string'],
  ] as const) {
    test(`${JSON.stringify(body)} → ${path}`, () => {
      assert.deepEqual(typeMismatch(schema, body), { path, got, want })
    })
  }

  test('the first mismatch is found whatever else the body lacks or breaks', () => {
    assert.equal(typeMismatch(schema, { create_user: 'x' })?.path, 'body/create_user')
  })

  test('a body field no struct decodes with a type, and a field outside the decoded ones, are passed over', () => {
    assert.equal(bodyTypeMismatch(schema, { gotrue_meta_security: 5 }), undefined)
    assert.equal(bodyTypeMismatch(schema, { email: 1 }, ['password']), undefined)
    assert.equal(bodyTypeMismatch(schema, { email: 1, password: 2 }, ['password'])?.path, 'body/password')
    assert.equal(bodyTypeMismatch(schema, { email: 1 })?.path, 'body/email')
  })
})
