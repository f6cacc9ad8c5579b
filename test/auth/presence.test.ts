import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { emptyAdmitted, present, withoutEmpty } from '../../src/auth/types/presence.ts'
import { bodyAjv } from '../../src/validation.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'

const JSON_CT = { 'content-type': 'application/json' }

describe('`""` read as absent on the fields a handler reads so', () => {
  test('withoutEmpty drops only the listed top-level empty strings', () => {
    const body = { email: '', phone: '155', data: { email: '' }, token: '' }
    assert.deepEqual(withoutEmpty(body, ['email', 'phone']), { phone: '155', data: { email: '' }, token: '' })
    assert.equal(withoutEmpty(body, undefined), body)
    const kept = { email: 'a@b.co' }
    assert.equal(withoutEmpty(kept, ['email']), kept)
    assert.equal(withoutEmpty('x', ['email']), 'x')
  })

  test('the documented property admits "" and says so; a required one does not', () => {
    const schema: { type: string; required: string[]; properties: Record<string, Record<string, unknown>> } = {
      type: 'object',
      required: ['type'],
      properties: {
        email: { type: 'string', format: 'email', description: 'E-mail', examples: ['a@b.co'] },
        type: { type: 'string', description: 'Type' },
        bare: { type: 'string' },
      },
    }
    const out = emptyAdmitted(schema, ['email', 'type', 'bare', 'missing'])
    assert.match(out.properties.email!.description as string, /`""` is read as absent/)
    assert.deepEqual(out.properties.email!.examples, ['a@b.co'])
    assert.deepEqual(out.properties.type, schema.properties.type)
    assert.equal(out.properties.bare!.description, undefined)
    const validate = bodyAjv.compile(out)
    assert.equal(validate({ type: 'x', email: '' }), true)
    assert.equal(validate({ type: 'x', email: 'nope' }), false)
    assert.equal(emptyAdmitted(schema, undefined), schema)
    assert.equal(emptyAdmitted({ type: 'string' }, ['email']).type, 'string')
  })

  test('a union of strings and null admits "" with its null beside the type; other unions stay', () => {
    const pkce = {
      description: 'PKCE',
      examples: ['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'],
      anyOf: [{ type: 'string', minLength: 43 }, { type: 'null' }],
    }
    const mixed = { anyOf: [{ type: 'string' }, { type: 'integer' }] }
    const out = emptyAdmitted({ type: 'object', properties: { pkce, mixed } }, ['pkce', 'mixed'])
    assert.deepEqual(out.properties.pkce, {
      description: 'PKCE. `""` is read as absent',
      examples: pkce.examples,
      type: ['string', 'null'],
      anyOf: [{ minLength: 43 }, { maxLength: 0 }],
    })
    assert.equal(out.properties.mixed, mixed)
    const validate = bodyAjv.compile(out.properties.pkce!)
    for (const ok of ['', null, 'a'.repeat(43)]) assert.equal(validate(ok), true, String(ok))
    assert.equal(validate('short'), false)
  })

  test('present counts a non-empty string only', () => {
    const validate = bodyAjv.compile({ not: present('email', 'phone') })
    assert.equal(validate({ email: 'a', phone: 'b' }), false)
    for (const other of ['', null, undefined]) assert.equal(validate({ email: 'a', phone: other }), true)
  })
})

describe('through authgate, as Supabase Auth reads them', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  // What Supabase's Go client sends (both keys, one empty), and anonymous sign-ups with null or "".
  const FORWARDED: Array<[string, string, string]> = [
    ['POST', '/auth/otp', '{"email":"a@b.co","phone":""}'],
    ['POST', '/auth/otp', '{"email":"","phone":"15550000001"}'],
    ['POST', '/auth/verify', '{"type":"email","token":"123456","email":"a@b.co","phone":""}'],
    ['POST', '/auth/verify', '{"type":"sms","token":"123456","email":"","phone":"15550000001"}'],
    ['POST', '/auth/verify', '{"type":"email","token_hash":"abc","token":"","email":"","phone":"","redirect_to":""}'],
    ['POST', '/auth/signup', '{"email":null,"phone":null}'],
    ['POST', '/auth/signup', '{"email":"","phone":""}'],
    ['POST', '/auth/signup', '{"email":"a@b.co","phone":"","password":"correct-horse-battery"}'],
    ['POST', '/auth/token?grant_type=password', '{"email":"","phone":"15550000001","password":"x"}'],
    ['POST', '/auth/resend', '{"type":"signup","email":"a@b.co","phone":""}'],
    ['PUT', '/auth/user', '{"email":"","data":{"a":1}}'],
  ]
  for (const [method, url, body] of FORWARDED) {
    test(`${method} ${url} ${body} is forwarded as sent`, async () => {
      h.backend.requests.length = 0
      const res = await h.app.inject({
        method: method as 'POST',
        url,
        payload: body,
        headers: { ...JSON_CT, authorization: 'Bearer x' },
      })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(h.backend.requests.length, 1)
      assert.equal(h.backend.requests[0]!.body.toString(), body)
    })
  }
})
