import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backendQuery } from '../../src/core/go-values.ts'
import { brokenRequirement, describeRequirements } from '../../src/auth/query-requirements.ts'
import type { QueryRequirement } from '../../src/auth/routes/entry.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'

const pkce: QueryRequirement = {
  param: 'grant_type',
  value: 'pkce',
  fields: ['auth_code', 'code_verifier'],
  answer: { code: 'validation_failed', status: 400, message: 'both' },
}

describe('body fields a query value requires', () => {
  test('the first value of the parameter decides, as Supabase Auth reads it', () => {
    assert.equal(brokenRequirement([pkce], backendQuery('/token?grant_type=pkce'), { auth_code: 'a' }), pkce)
    assert.equal(brokenRequirement([pkce], backendQuery('/token?grant_type=password&grant_type=pkce'), {}), undefined)
    assert.equal(brokenRequirement([pkce], backendQuery('/token?grant_type=pkce&grant_type=password'), {}), pkce)
    assert.equal(brokenRequirement([pkce], backendQuery('/token'), {}), undefined)
    assert.equal(
      brokenRequirement([pkce], backendQuery('/token?grant_type=pkce'), { auth_code: 'a', code_verifier: 'v' }),
      undefined,
    )
    assert.equal(
      brokenRequirement([pkce], backendQuery('/token?grant_type=pkce'), { auth_code: 'a', code_verifier: '' }),
      pkce,
    )
    assert.equal(brokenRequirement([pkce], backendQuery('/token?grant_type=pkce'), null), pkce)
  })

  test('the description states each requirement with its answer', () => {
    assert.equal(
      describeRequirements([pkce]),
      'With `grant_type=pkce`, `auth_code` and `code_verifier` are required and non-empty (400 `validation_failed`: "both").',
    )
  })

  describe('on POST /token', () => {
    let h: Harness
    before(async () => {
      h = await withFakeBackend()
    })
    after(() => h.close())
    const token = (query: string, body: string) =>
      h.app.inject({
        method: 'POST',
        url: `/auth/token?${query}`,
        headers: { 'content-type': 'application/json' },
        payload: body,
      })

    test('a pkce exchange without its verifier is refused in the backend words and not forwarded', async () => {
      h.backend.requests.length = 0
      const res = await token('grant_type=pkce', '{"auth_code":"c"}')
      assert.equal(res.statusCode, 400)
      assert.equal(res.json().msg, 'invalid request: both auth code and code verifier should be non-empty')
      assert.equal(h.backend.requests.length, 0)
    })

    test('a whole pkce exchange and the other grants are forwarded', async () => {
      h.backend.requests.length = 0
      assert.equal((await token('grant_type=pkce', '{"auth_code":"c","code_verifier":"v"}')).statusCode, 200)
      assert.equal((await token('grant_type=refresh_token', '{"refresh_token":"r"}')).statusCode, 200)
      assert.equal(h.backend.requests.length, 2)
    })

    test("the document's description of POST /token states the requirement", async () => {
      const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json()
      assert.match(doc.paths['/auth/token'].post.description, /With `grant_type=pkce`, `auth_code` and `code_verifier`/)
    })
  })
})
