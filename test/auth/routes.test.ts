import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ROUTE_GROUPS } from '../../src/core/route-groups.ts'
import { AUTH_ROUTES, DEFAULT_RATE_LIMITED, routeName } from '../../src/auth/routes/index.ts'

type Schema = Record<string, any>

/**
 * Visits every named property of an object schema, through unions, arrays and records. A member
 * that requires fields is a rule pairing them (src/auth/types/presence.ts `present`), not where
 * they are documented.
 */
function* properties(schema: Schema, path: string): Generator<[string, Schema]> {
  if (schema.properties) {
    for (const [name, prop] of Object.entries<Schema>(schema.properties)) {
      yield [`${path}.${name}`, prop]
      yield* properties(prop, `${path}.${name}`)
    }
  }
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const)
    for (const s of schema[key] ?? []) if (!s.required) yield* properties(s, path)
  if (schema.items && !Array.isArray(schema.items)) yield* properties(schema.items, `${path}[]`)
}

test('every property of every route type has a description and an example (nested objects: through their properties)', () => {
  for (const route of AUTH_ROUTES) {
    const schemas: Array<[string, Schema]> = []
    if (route.body) schemas.push(['body', route.body])
    if (route.query) schemas.push(['query', route.query])
    for (const [status, r] of Object.entries(route.responses))
      if (r.schema) schemas.push([`response ${status}`, r.schema])
    for (const [where, schema] of schemas) {
      for (const [path, prop] of properties(schema, `${routeName(route)} ${where}`)) {
        assert.ok(typeof prop.description === 'string' && prop.description.length > 0, `${path} has no description`)
        // A nested object is exemplified by its own properties.
        if (!prop.properties)
          assert.ok(Array.isArray(prop.examples) && prop.examples.length > 0, `${path} has no example`)
      }
    }
  }
})

test('request types fill in nothing: no defaults, and unknown properties are allowed', () => {
  for (const route of AUTH_ROUTES) {
    if (!route.body) continue
    const json = JSON.stringify(route.body)
    assert.doesNotMatch(json, /"default":/, `${routeName(route)} has a default`)
    assert.notEqual(
      (route.body as Schema).additionalProperties,
      false,
      `${routeName(route)} forbids unknown properties`,
    )
  }
})

test('optional booleans stay optional', () => {
  const otp = AUTH_ROUTES.find((r) => routeName(r) === 'POST /otp')!.body as Schema
  assert.ok(!(otp.required ?? []).includes('create_user'))
  const token = AUTH_ROUTES.find((r) => routeName(r) === 'POST /token')!.body as Schema
  assert.ok(!(token.required ?? []).includes('link_identity'))
})

test('the table has one entry per method and path, every one tagged, summarised, described and with a success response', () => {
  const names = AUTH_ROUTES.map(routeName)
  assert.equal(new Set(names).size, names.length)
  for (const r of AUTH_ROUTES) {
    assert.ok(['Auth', 'OAuth', 'Passkey', 'MFA', 'SSO'].includes(r.tag))
    assert.ok(r.summary.length > 0)
    assert.ok((r.description ?? '').length > 20, `${routeName(r)} has no description`)
    assert.ok(Object.keys(r.responses).some((s) => Number(s) < 400))
  }
})

test('the default rate-limited routes: sign-in and sign-up, and MFA challenge and verify', () => {
  assert.deepEqual([...DEFAULT_RATE_LIMITED].sort(), [
    'POST /factors/{factor_id}/challenge',
    'POST /factors/{factor_id}/verify',
    'POST /magiclink',
    'POST /oauth/clients/register',
    'POST /oauth/token',
    'POST /otp',
    'POST /passkeys/authentication/options',
    'POST /passkeys/authentication/verify',
    'POST /recover',
    'POST /resend',
    'POST /signup',
    'POST /token',
  ])
})

test('bearer is documented exactly where Supabase Auth requires a user token', () => {
  const bearer = AUTH_ROUTES.filter((r) => r.bearer)
    .map(routeName)
    .sort()
  assert.deepEqual(bearer, [
    'DELETE /factors/{factor_id}',
    'DELETE /passkeys/{id}',
    'DELETE /user/identities/{identity_id}',
    'DELETE /user/oauth/grants',
    'GET /oauth/authorizations/{authorization_id}',
    'GET /oauth/userinfo',
    'GET /passkeys',
    'GET /reauthenticate',
    'GET /user',
    'GET /user/identities/authorize',
    'GET /user/oauth/grants',
    'PATCH /passkeys/{id}',
    'POST /factors',
    'POST /factors/{factor_id}/challenge',
    'POST /factors/{factor_id}/verify',
    'POST /logout',
    'POST /oauth/authorizations/{authorization_id}/consent',
    'POST /passkeys/registration/options',
    'POST /passkeys/registration/verify',
    'POST /reauthenticate',
    'PUT /user',
  ])
})

test('every route with a path parameter documents it, and only the parameters its template names', () => {
  for (const r of AUTH_ROUTES) {
    const names = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
    const documented = Object.keys((r.params as Schema | undefined)?.properties ?? {})
    assert.deepEqual(documented, names, routeName(r))
  }
})

test('every route belongs to a known group; core holds the sign-in essentials', () => {
  for (const r of AUTH_ROUTES) assert.ok(r.group in ROUTE_GROUPS, routeName(r))
  const group = (name: string) => AUTH_ROUTES.find((r) => routeName(r) === name)!.group
  assert.equal(group('POST /signup'), 'core')
  assert.equal(group('GET /.well-known/jwks.json'), 'core')
  assert.equal(group('POST /factors'), 'mfa')
  assert.equal(group('POST /sso'), 'sso')
  assert.equal(group('DELETE /user/identities/{identity_id}'), 'identities')
  assert.equal(group('GET /user/oauth/grants'), 'oauth')
})
