import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BACKEND_ANSWERS } from '../../src/auth/backend-answers.ts'
import { AUTH_ROUTES, routeName } from '../../src/auth/routes/index.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'
import { ANSWER_CASES, BEARER_ANSWER_CASES, OAUTH_ANSWER_CASES } from '../support/backend-answer-cases.ts'

const JSON_CT = { 'content-type': 'application/json' }

describe("validation answers in Supabase Auth's words", () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  const consent = {
    method: 'POST',
    url: '/oauth/authorizations/abc/consent',
    body: '{"action":"maybe"}',
    status: 400,
    code: 'validation_failed',
    message: "action must be 'approve' or 'deny'",
  }
  for (const c of [...ANSWER_CASES, ...BEARER_ANSWER_CASES, consent]) {
    test(`${c.method} ${c.url} ${c.body.slice(0, 60)} → ${c.status} ${c.code}, both shapes, nothing forwarded`, async () => {
      h.backend.requests.length = 0
      const legacy = await h.app.inject({
        method: c.method as 'POST',
        url: '/auth' + c.url,
        payload: c.body,
        headers: JSON_CT,
      })
      assert.equal(legacy.statusCode, c.status, legacy.body)
      const l = legacy.json()
      assert.equal(l.code, c.status)
      assert.equal(l.error_code, c.code)
      assert.equal(l.msg, c.message)
      assert.equal(legacy.headers['x-sb-error-code'], c.code)

      const current = await h.app.inject({
        method: c.method as 'POST',
        url: '/auth' + c.url,
        payload: c.body,
        headers: { ...JSON_CT, 'x-supabase-api-version': '2024-01-01' },
      })
      assert.equal(current.statusCode, c.status)
      const n = current.json()
      assert.equal(n.code, c.code)
      assert.equal(n.message, c.message)
      assert.equal(current.headers['x-supabase-api-version'], '2024-01-01')
      if (c.code === 'weak_password') {
        assert.deepEqual(l.weak_password, { reasons: ['length'] })
        assert.deepEqual(n.weak_password, { reasons: ['length'] })
        // Supabase Auth's 2024-01-01 weak-password body comes without x-sb-error-code.
        assert.equal(current.headers['x-sb-error-code'], undefined)
      } else {
        assert.equal('weak_password' in l, false)
        assert.equal(current.headers['x-sb-error-code'], c.code)
      }
      assert.equal(h.backend.requests.length, 0)
    })
  }

  for (const c of OAUTH_ANSWER_CASES) {
    test(`POST /oauth/token ${c.body} → 400 ${c.error} in the OAuth shape, both API versions, nothing forwarded`, async () => {
      h.backend.requests.length = 0
      for (const version of [{}, { 'x-supabase-api-version': '2024-01-01' }]) {
        const res = await h.app.inject({
          method: 'POST',
          url: '/auth/oauth/token',
          payload: c.body,
          headers: {
            'content-type': c.json ? 'application/json' : 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from('client:secret').toString('base64')}`,
            ...version,
          },
        })
        assert.equal(res.statusCode, 400)
        assert.deepEqual(res.json(), { error: c.error, error_description: c.description })
        assert.equal(res.headers['content-type'], 'application/json')
        assert.equal(res.headers['x-sb-error-code'], undefined)
      }
      assert.equal(h.backend.requests.length, 0)
    })
  }

  test('every rule names a mounted typed route with a body, and is exercised above', () => {
    const exercised = new Set(
      [...ANSWER_CASES, ...BEARER_ANSWER_CASES, consent].map((c) => `${c.method} ${c.url.split('?')[0]}`),
    )
    if (OAUTH_ANSWER_CASES.length > 0) exercised.add('POST /oauth/token')
    for (const rule of BACKEND_ANSWERS) {
      const route = AUTH_ROUTES.find((r) => routeName(r) === rule.route)
      assert.ok(route?.body, rule.route)
      const concrete = rule.route.replace('{authorization_id}', 'abc')
      assert.ok(exercised.has(concrete), `${rule.route} has no case`)
    }
  })

  test('a failure Supabase Auth has no answer for keeps validation_failed with the validator message', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/signup',
      payload: '{"password":"secret123","code_challenge":"short"}',
      headers: JSON_CT,
    })
    assert.equal(res.statusCode, 400)
    assert.equal(res.json().error_code, 'validation_failed')
    assert.match(res.json().msg, /code_challenge/)
  })

  test("the e-mail rule is Supabase Auth's: a domain without a dot passes", async () => {
    h.backend.requests.length = 0
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/otp',
      payload: '{"email":"ada@localhost"}',
      headers: JSON_CT,
    })
    assert.equal(res.statusCode, 200)
    assert.equal(h.backend.requests.length, 1)
  })
})
