import assert from 'node:assert/strict'
import { test } from 'node:test'
import { routeSchema } from '../src/auth/route-docs.ts'
import { enabledRoutes } from '../src/auth/routes/index.ts'
import { authValidatorCompiler, bodyAjv } from '../src/validation.ts'

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
