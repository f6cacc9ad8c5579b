import assert from 'node:assert/strict'
import { test } from 'node:test'
import { routeSchema } from '../src/auth/route-docs.ts'
import { enabledRoutes } from '../src/auth/routes/index.ts'
import { authValidatorCompiler, bodyAjv, readOnlyAsJsonBody, withoutPrototypeRule } from '../src/validation.ts'

const compile = (schema: object, httpPart = 'body') =>
  authValidatorCompiler({ schema, httpPart, method: 'POST', url: '/x' }) as ((data: unknown) => boolean) & {
    errors?: unknown[] | null
  }

test('a body validator is compiled on its first body, not when the route is registered', () => {
  // A schema ajv refuses shows when compiling happens: not at registration, at the first body.
  const broken = compile({ type: 'no such type' })
  assert.throws(() => broken({}), /type/)
})

test('a lazily compiled validator judges as ajv does and hands Fastify the reasons of each refusal', () => {
  const validate = compile({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] })
  const reasons = () =>
    (validate.errors as Array<{ instancePath: string; keyword: string }> | null)?.map((e) => [
      e.instancePath,
      e.keyword,
    ])
  assert.equal(validate({ n: '5' }), false)
  assert.deepEqual(reasons(), [['/n', 'type']])
  assert.equal(validate({ n: 5 }), true)
  assert.equal(reasons(), undefined, 'a body let through carries no reasons left from the one before')
  assert.equal(validate({}), false)
  assert.deepEqual(reasons(), [['', 'required']])
})

test('only bodies are judged: query strings, parameters and headers go to Supabase Auth as sent', () => {
  for (const part of ['querystring', 'params', 'headers'])
    assert.equal(compile({ type: 'object', required: ['x'] }, part)({}), true, part)
})

test('every mounted route’s body schema compiles (a mistake would otherwise surface at its first request)', () => {
  let bodies = 0
  for (const route of enabledRoutes()) {
    const body = routeSchema(route, true, true).body as object | undefined
    if (!body) continue
    assert.doesNotThrow(() => bodyAjv.compile(body), `${route.method} ${route.path}`)
    bodies++
  }
  assert.ok(bodies >= 20, `${bodies} routes with a body schema`)
})

test('a body read only as JSON is judged without the prototype-key rule, which its reader applies first; one not so marked (a route that takes forms) keeps it', () => {
  // The rule as src/auth/route-docs.ts states it, at the root and on a nested object.
  const schema = () =>
    routeSchema(
      enabledRoutes().find((r) => r.method === 'POST' && r.path === '/signup')!,
      false,
    ).body as object
  // An own `__proto__` key, as only a form's reader (or a caller of the validator) could make it.
  const poisoned = JSON.parse('{"email":"a@example.com","password":"secret12","__proto__":"x"}') as object
  const nested = JSON.parse('{"email":"a@example.com","password":"secret12","data":{"__proto__":"x"}}') as object
  const whole = compile(schema())
  assert.equal(whole(poisoned), false)
  assert.equal(whole(nested), false)
  const jsonOnly = schema()
  readOnlyAsJsonBody(jsonOnly)
  const validate = compile(jsonOnly)
  assert.equal(validate(poisoned), true)
  assert.equal(validate(nested), true)
  // Everything else is judged as before.
  assert.equal(validate({ email: 'a@example.com' }), false)
  assert.equal(whole({ email: 'a@example.com' }), false)
  assert.deepEqual(validate.errors, whole.errors)
  // Only the rule goes: a schema's own `propertyNames` stays.
  const own = {
    type: 'object',
    propertyNames: { not: { const: 'x' } },
    properties: { a: { propertyNames: { maxLength: 2 } } },
  }
  assert.deepEqual(withoutPrototypeRule(own), own)
  assert.equal(JSON.stringify(withoutPrototypeRule(schema())).includes('__proto__'), false)
})
