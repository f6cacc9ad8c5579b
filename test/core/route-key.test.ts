import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseRouteKey, routeKey } from '../../src/core/route-key.ts'
import { AUTH_ROUTES, DEFAULT_RATE_LIMITED, isRouteId, routeName } from '../../src/auth/routes/index.ts'

test('a route name is read as an operator writes it', () => {
  assert.deepEqual(parseRouteKey(' post \t/signup '), { method: 'POST', path: '/signup', key: 'POST /signup' })
  assert.deepEqual(parseRouteKey('delete /passkeys/{id}'), {
    method: 'DELETE',
    path: '/passkeys/{id}',
    key: 'DELETE /passkeys/{id}',
  })
  for (const bad of ['', 'POST', '/signup', 'POST signup', 'POST /sign up', 'P0ST /signup'])
    assert.equal(parseRouteKey(bad), undefined, JSON.stringify(bad))
  assert.equal(routeKey('get', '/user'), 'GET /user')
})

test("every mounted route's name reads back to its method and template, and only those are route ids", () => {
  for (const route of AUTH_ROUTES) {
    const name = routeName(route)
    assert.deepEqual(parseRouteKey(name), { method: route.method, path: route.path, key: name })
    assert.ok(isRouteId(name), name)
  }
  assert.ok(DEFAULT_RATE_LIMITED.every(isRouteId))
  for (const other of ['GET /admin/users', 'post /signup', 'POST /signup ', 'PATCH /user'])
    assert.equal(isRouteId(other), false, other)
})
