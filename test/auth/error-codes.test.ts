import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BACKEND_ANSWERS } from '../../src/auth/backend-answers.ts'
import { KNOWN_ERROR_CODES, SUPABASE_AUTH_ERROR_CODES, SUPABASE_AUTH_OAUTH_ERRORS } from '../../src/auth/error-codes.ts'
import { routeSchema } from '../../src/auth/route-docs.ts'
import { AUTH_ROUTES, routeName } from '../../src/auth/routes/index.ts'
import { ERRORS } from '../../src/errors.ts'

test('every error code the route documentation names is in the one list', () => {
  let checked = 0
  for (const route of AUTH_ROUTES) {
    for (const limited of [false, true]) {
      const byStatus = routeSchema(route, limited)['x-error-codes'] as Record<string, string[]>
      for (const [status, codes] of Object.entries(byStatus)) {
        for (const code of codes) {
          assert.ok(KNOWN_ERROR_CODES.has(code), `${routeName(route)} ${status}: unknown error code ${code}`)
          checked++
        }
      }
    }
    for (const codes of Object.values(route.errors))
      for (const code of codes ?? []) assert.ok(KNOWN_ERROR_CODES.has(code))
  }
  for (const rule of BACKEND_ANSWERS)
    for (const answer of rule.answers) assert.ok(KNOWN_ERROR_CODES.has(answer.code), `${rule.route}: ${answer.code}`)
  assert.ok(checked > AUTH_ROUTES.length * 2, `only ${checked} codes seen`)
})

test("the list is Supabase Auth's codes, its OAuth errors and authgate's own, each once", () => {
  assert.equal(new Set(SUPABASE_AUTH_ERROR_CODES).size, SUPABASE_AUTH_ERROR_CODES.length)
  assert.equal(new Set(SUPABASE_AUTH_OAUTH_ERRORS).size, SUPABASE_AUTH_OAUTH_ERRORS.length)
  const all = [...SUPABASE_AUTH_ERROR_CODES, ...SUPABASE_AUTH_OAUTH_ERRORS, ...Object.keys(ERRORS)]
  assert.deepEqual([...KNOWN_ERROR_CODES].sort(), [...new Set(all)].sort())
  // Codes are snake case, except the two OAuth errors Supabase Auth spells with a space.
  for (const code of KNOWN_ERROR_CODES) assert.match(code, /^[a-z0-9]+([_ ][a-z0-9]+)*$/, code)
  assert.ok(!KNOWN_ERROR_CODES.has('mfa_web_authn_enroll_not_enabled'))
})
