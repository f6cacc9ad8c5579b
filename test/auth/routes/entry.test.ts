import assert from 'node:assert/strict'
import { test } from 'node:test'
import { withDefaults, type GroupDefaults } from '../../../src/auth/routes/entry.ts'
import { AUTH_ROUTES, routeName } from '../../../src/auth/routes/index.ts'

const DEFAULTS: GroupDefaults = { kind: 'typed', tag: 'MFA', group: 'mfa', bearer: true, rateLimited: false }

test("a group's defaults fill what an entry leaves out; the entry's own fields win", () => {
  const [plain, own] = withDefaults(DEFAULTS, [
    { method: 'GET', path: '/a', summary: 'A', responses: {}, errors: {} },
    { method: 'POST', path: '/b', summary: 'B', responses: {}, errors: {}, group: 'core', rateLimited: true },
  ])
  assert.deepEqual(plain, { ...DEFAULTS, method: 'GET', path: '/a', summary: 'A', responses: {}, errors: {} })
  assert.equal(own!.group, 'core')
  assert.equal(own!.rateLimited, true)
  assert.equal(own!.tag, 'MFA')
  assert.equal(own!.bearer, true)
})

test('every route of the table has its group fields set', () => {
  for (const r of AUTH_ROUTES) {
    for (const field of ['kind', 'tag', 'group', 'bearer', 'rateLimited'] as const)
      assert.notEqual(r[field], undefined, `${routeName(r)} ${field}`)
  }
})
