import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { nulField } from '../../src/auth/body.ts'
import { AUTH_ROUTES, routeName } from '../../src/auth/routes/index.ts'
import {
  NUL_REFUSED,
  emptyAdmitted,
  holdsNul,
  nulDocumented,
  present,
  withoutEmpty,
} from '../../src/auth/types/presence.ts'
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

describe('NUL characters where Supabase Auth stores the value', () => {
  test('found in strings and keys at any depth of the listed fields only', () => {
    assert.equal(holdsNul('a\u0000'), true)
    assert.equal(holdsNul({ a: [1, { b: 'x\u0000y' }] }), true)
    assert.equal(holdsNul({ 'k\u0000': 1 }), true)
    assert.equal(holdsNul({ a: ['ok', 1, null, true] }), false)
    assert.equal(nulField({ data: { a: '\u0000' }, password: '\u0000' }, ['data']), 'data')
    assert.equal(nulField({ password: '\u0000' }, ['data']), undefined)
    assert.equal(nulField({ data: 'x' }, undefined), undefined)
    assert.equal(nulField([{ data: '\u0000' }], ['data']), undefined)
  })

  test('the document states the rule on each listed field', () => {
    const documented = nulDocumented({ properties: { data: { description: 'Metadata' }, bare: {} } }, [
      'data',
      'bare',
      'none',
    ])
    assert.equal(documented.properties.data.description, `Metadata. ${NUL_REFUSED}`)
    assert.equal((documented.properties.bare as { description?: string }).description, NUL_REFUSED)
    assert.deepEqual(nulDocumented({ type: 'string' }, ['data']), { type: 'string' })
    const verify = AUTH_ROUTES.find((r) => routeName(r) === 'POST /verify')!.body as {
      properties: Record<string, { description: string }>
    }
    assert.match(verify.properties.token_hash!.description, /NUL character/)
  })

  test('refused with 400 before anything is forwarded; elsewhere a NUL is the backend’s', async (t) => {
    const h = await withFakeBackend()
    t.after(() => h.close())
    const send = (url: string, payload: string) =>
      h.app.inject({ method: 'POST', url, payload, headers: { ...JSON_CT, 'x-supabase-api-version': '2024-01-01' } })
    const refused = await send('/auth/otp', '{"email":"a@b.co","data":{"note":"a\\u0000b"}}')
    assert.equal(refused.statusCode, 400)
    assert.equal(refused.json().code, 'validation_failed')
    assert.match(refused.json().message, /body\/data contains a NUL character/)
    const hash = await send('/auth/verify', '{"type":"email","token_hash":"pkce_\\u0000"}')
    assert.equal(hash.statusCode, 400)
    assert.equal(h.backend.requests.length, 0)
    const password = await send('/auth/signup', '{"email":"a@b.co","password":"correct-horse\\u0000"}')
    assert.equal(password.statusCode, 200, password.body)
    assert.equal(h.backend.requests.length, 1)
  })
})
