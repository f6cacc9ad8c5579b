import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AUTH_ROUTES, routeName } from '../../src/auth/routes/index.ts'
import { nullableOptionals, withoutNulls } from '../../src/auth/types/nullable.ts'
import { bodyAjv } from '../../src/validation.ts'
import { VALID_BODIES, withFakeBackend, type Harness } from '../support/app.ts'
import { optionalFieldPaths, schemaAt, withNullAt } from '../support/optional-fields.ts'

const admitsNull = (s: Record<string, unknown>) =>
  s.type === undefined && s.anyOf === undefined
    ? true
    : Array.isArray(s.type)
      ? s.type.includes('null')
      : Array.isArray(s.anyOf) && s.anyOf.some((a) => (a as { type?: unknown }).type === 'null')

describe('JSON null on optional fields', () => {
  const bodies = AUTH_ROUTES.filter((r) => r.body && r.kind === 'typed')

  it('the document admits null on every optional property of every request body, and only there', () => {
    let checked = 0
    for (const route of bodies) {
      for (const path of optionalFieldPaths(route.body)) {
        const property = schemaAt(route.body, path)
        assert.ok(admitsNull(property), `${routeName(route)} ${path.join('.')}: ${JSON.stringify(property)}`)
        // The property's own validator takes null (enum lists, type arrays).
        assert.ok(bodyAjv.validate(property, null), `${routeName(route)} ${path.join('.')}`)
        checked++
      }
      const required = (route.body as { required?: string[] }).required ?? []
      for (const name of required) {
        const property = schemaAt(route.body, [name])
        assert.ok(!bodyAjv.validate(property, null), `${routeName(route)} ${name} is required: null is not a value`)
      }
    }
    assert.ok(checked > 60, `only ${checked} optional fields found`)
  })

  it('nullableOptionals keeps titles, constraints and enums, and adds null to them', () => {
    const schema = nullableOptionals({
      type: 'object',
      title: 'T',
      required: ['a'],
      properties: {
        a: { type: 'string' },
        b: { type: 'string', minLength: 6, enum: ['x', 'y'] },
        c: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        d: { type: 'object', properties: { e: { type: 'string' } } },
      },
    })
    assert.equal(schema.title, 'T')
    const p = schema.properties as Record<string, Record<string, unknown>>
    assert.deepEqual(p.a, { type: 'string' })
    assert.deepEqual(p.b, { type: ['string', 'null'], minLength: 6, enum: ['x', 'y', null] })
    assert.deepEqual(p.c, { anyOf: [{ type: 'string' }, { type: 'null' }] })
    assert.deepEqual(p.d, { type: ['object', 'null'], properties: { e: { type: ['string', 'null'] } } })
  })

  it('withoutNulls drops null properties at any depth and keeps array items', () => {
    assert.deepEqual(withoutNulls({ a: null, b: { c: null, d: 1 }, e: [null, { f: null }] }), {
      b: { d: 1 },
      e: [null, {}],
    })
  })

  it('withoutNulls keeps the keys before and after the first null, in order, and leaves the parsed value as it was', () => {
    const parsed = JSON.parse('{"a":1,"b":{"x":[1,{"y":null,"z":2}]},"c":null,"d":"s","e":[{"f":null},3]}')
    const before = JSON.stringify(parsed)
    const judged = withoutNulls(parsed)
    assert.equal(JSON.stringify(judged), '{"a":1,"b":{"x":[1,{"z":2}]},"d":"s","e":[{},3]}')
    assert.equal(JSON.stringify(parsed), before)
    // Nothing to drop: the value itself, not a copy.
    const plain = JSON.parse('{"a":[1,{"b":"c"}],"d":{"e":0}}')
    assert.equal(withoutNulls(plain), plain)
  })

  describe('through authgate', () => {
    let h: Harness
    before(async () => {
      h = await withFakeBackend()
    })
    after(async () => {
      await h.close()
    })

    const send = (method: string, url: string, body: string) =>
      h.app.inject({ method: method as 'POST', url, headers: { 'content-type': 'application/json' }, payload: body })

    it('captcha_token: null is forwarded byte for byte on every route that reads it', async () => {
      for (const route of bodies) {
        if (!optionalFieldPaths(route.body).some((p) => p.join('.') === 'gotrue_meta_security.captcha_token')) continue
        const valid = VALID_BODIES[routeName(route)]!
        const body = JSON.stringify(withNullAt(JSON.parse(valid), ['gotrue_meta_security', 'captcha_token']))
        const url = '/auth' + route.path + (route.path === '/token' ? '?grant_type=password' : '')
        const before = h.backend.requests.length
        const res = await send(route.method, url, body)
        assert.equal(res.statusCode, 200, `${routeName(route)}: ${res.body}`)
        assert.equal(h.backend.requests.at(-1)!.body.toString(), body)
        assert.equal(h.backend.requests.length, before + 1)
      }
    })

    it('a null field counts as absent for the rules that pair fields, as Supabase Auth reads it', async () => {
      // An e-mail sent as null beside a phone is not "both".
      let res = await send('POST', '/auth/otp', '{"email":null,"phone":"+15550000001"}')
      assert.equal(res.statusCode, 200, res.body)
      // Neither e-mail nor phone (both null) is an anonymous sign-up, which needs no password.
      res = await send('POST', '/auth/signup', '{"email":null,"phone":null,"password":null,"data":null}')
      assert.equal(res.statusCode, 200, res.body)
      // An e-mail with a null password is a sign-up without a password: Supabase Auth's words.
      const before = h.backend.requests.length
      res = await send('POST', '/auth/signup', '{"email":"a@example.com","password":null}')
      assert.equal(res.statusCode, 400)
      assert.equal(res.json().msg, 'Signup requires a valid password')
      assert.equal(h.backend.requests.length, before)
    })
  })
})
