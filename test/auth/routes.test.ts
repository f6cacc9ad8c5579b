import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH_ROUTES, DEFAULT_RATE_LIMITED, routeName } from '../../src/auth/routes.ts'

type Schema = Record<string, any>

/** Visits every named property of an object schema, through unions, arrays and records. */
function* properties(schema: Schema, path: string): Generator<[string, Schema]> {
  if (schema.properties) {
    for (const [name, prop] of Object.entries<Schema>(schema.properties)) {
      yield [`${path}.${name}`, prop]
      yield* properties(prop, `${path}.${name}`)
    }
  }
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) for (const s of schema[key] ?? []) yield* properties(s, path)
  if (schema.items && !Array.isArray(schema.items)) yield* properties(schema.items, `${path}[]`)
}

test('every property of every route type has a description and an example (nested objects: through their properties)', () => {
  for (const route of AUTH_ROUTES) {
    const schemas: Array<[string, Schema]> = []
    if (route.body) schemas.push(['body', route.body])
    if (route.query) schemas.push(['query', route.query])
    for (const [status, r] of Object.entries(route.responses)) if (r.schema) schemas.push([`response ${status}`, r.schema])
    for (const [where, schema] of schemas) {
      for (const [path, prop] of properties(schema, `${routeName(route)} ${where}`)) {
        assert.ok(typeof prop.description === 'string' && prop.description.length > 0, `${path} has no description`)
        // A nested object is exemplified by its own properties.
        if (!prop.properties) assert.ok(Array.isArray(prop.examples) && prop.examples.length > 0, `${path} has no example`)
      }
    }
  }
})

test('request types fill in nothing: no defaults, and unknown properties are allowed', () => {
  for (const route of AUTH_ROUTES) {
    if (!route.body) continue
    const json = JSON.stringify(route.body)
    assert.doesNotMatch(json, /"default":/, `${routeName(route)} has a default`)
    assert.notEqual((route.body as Schema).additionalProperties, false, `${routeName(route)} forbids unknown properties`)
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
    assert.ok(['Auth', 'OAuth', 'Passkey'].includes(r.tag))
    assert.ok(r.summary.length > 0)
    assert.ok((r.description ?? '').length > 20, `${routeName(r)} has no description`)
    assert.ok(Object.keys(r.responses).some((s) => Number(s) < 400))
  }
})

test('the default rate-limited routes are the nine of SEED.md §8.1', () => {
  assert.deepEqual([...DEFAULT_RATE_LIMITED].sort(), [
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

test('bearer is documented exactly where Supabase Auth requires a user token (NOTES.md decision 6)', () => {
  const bearer = AUTH_ROUTES.filter((r) => r.bearer).map(routeName).sort()
  assert.deepEqual(bearer, [
    'DELETE /passkeys/{id}',
    'GET /oauth/userinfo',
    'GET /passkeys',
    'GET /reauthenticate',
    'GET /user',
    'PATCH /passkeys/{id}',
    'POST /logout',
    'POST /passkeys/registration/options',
    'POST /passkeys/registration/verify',
    'POST /reauthenticate',
    'PUT /user',
  ])
})
