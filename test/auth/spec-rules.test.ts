import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AUTH_ROUTES } from '../../src/auth/routes/index.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'
import { schemaAt } from '../support/optional-fields.ts'

const body = (method: string, path: string) => AUTH_ROUTES.find((r) => r.method === method && r.path === path)!.body

/** The specification's field rules: visible in the document, and a body that breaks one is not forwarded. */
describe("the specification's field rules", () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(async () => {
    await h.close()
  })

  const post = (url: string, payload: string) =>
    h.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload })

  it('the document states them on the properties', () => {
    assert.equal(schemaAt(body('POST', '/signup'), ['password']).minLength, 6)
    // The e-mail's rule, or `""`, which Supabase Auth reads as no e-mail.
    assert.equal(
      (schemaAt(body('POST', '/token'), ['email']).anyOf as Array<Record<string, unknown>>)[0]!.format,
      'email',
    )
  })

  // Supabase Auth has no answer of its own for this (it looks the address up): the gateway's.
  it('POST /token?grant_type=password with a malformed e-mail is refused, not forwarded', async () => {
    for (const version of [undefined, '2024-01-01']) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/auth/token?grant_type=password',
        headers: { 'content-type': 'application/json', ...(version ? { 'x-supabase-api-version': version } : {}) },
        payload: '{"email":"a@","password":"secret12"}',
      })
      assert.equal(res.statusCode, 400)
      const json = res.json()
      assert.equal(version ? json.code : json.error_code, 'validation_failed')
      assert.match(version ? json.message : json.msg, /email/)
    }
    assert.equal(h.backend.requests.length, 0)
    // A well-formed one goes on.
    const ok = await post('/auth/token?grant_type=password', '{"email":"a@example.com","password":"secret12"}')
    assert.equal(ok.statusCode, 200)
    assert.equal(h.backend.requests.length, 1)
  })

  it('a sign-up password under 6 characters is refused, with or without an address', async () => {
    const before = h.backend.requests.length
    for (const payload of ['{"email":"a@example.com","password":"abc"}', '{"password":"abc"}']) {
      const res = await post('/auth/signup', payload)
      assert.equal(res.statusCode, 422, payload)
      assert.equal(res.json().error_code, 'weak_password')
    }
    assert.equal(h.backend.requests.length, before)
    // An anonymous sign-in sends no password: the rule does not get in its way.
    assert.equal((await post('/auth/signup', '{"data":{}}')).statusCode, 200)
  })
})
