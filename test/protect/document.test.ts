import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { Type } from 'typebox'
import { authgateProtect } from '../../src/protect/index.ts'
import { buildOpenApiDocument } from '../../src/docs-server/index.ts'
import { createRegistry } from '../../src/openapi/index.ts'
import { defineRoute } from '../../src/routes-dsl/index.ts'
import { ISSUER } from './support.ts'

type Op = { security: unknown; responses: Record<string, { headers?: Record<string, unknown> }> }

test('the document follows each route’s real requirement', async () => {
  const app = Fastify()
  const registry = createRegistry(app)
  await app.register(authgateProtect, { jwksUrl: new URL('http://127.0.0.1:1/jwks'), issuer: ISSUER })
  const ok = async () => ({ ok: true })
  const response = Type.Object({ ok: Type.Boolean() })
  app.route(defineRoute({ method: 'GET', url: '/required', auth: 'required', response, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/optional', auth: 'optional', response, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/mfa', auth: { aal: 'aal2' }, response, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/aal1', auth: { aal: 'aal1' }, response, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/role', auth: { role: 'service_role' }, response, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/scope', auth: { scope: ['email'] }, response, handler: ok }))
  app.route(
    defineRoute({ method: 'GET', url: '/both', auth: { mode: 'optional', role: ['a', 'b'] }, response, handler: ok }),
  )
  // A route tagged Public but checking tokens is documented by what it checks, not by its tag.
  app.route(defineRoute({ method: 'GET', url: '/tagged', tags: ['Public'], auth: 'required', response, handler: ok }))
  // Routes that declare nothing keep the tag rule.
  app.route(defineRoute({ method: 'GET', url: '/plain', response, handler: ok }))
  app.route(defineRoute({ method: 'GET', url: '/public', tags: ['Public'], response, handler: ok }))
  await app.ready()

  const doc = buildOpenApiDocument(registry.entries())
  const op = (path: string) => (doc.paths[path] as Record<string, Op>).get!
  const statuses = (path: string) => Object.keys(op(path).responses)

  assert.deepEqual(op('/required').security, [{ bearerAuth: [] }])
  assert.deepEqual(statuses('/required'), ['200', '400', '401', '500'])
  assert.ok(op('/required').responses['401']!.headers?.['WWW-Authenticate'])

  assert.deepEqual(op('/optional').security, [{}, { bearerAuth: [] }])
  assert.deepEqual(statuses('/optional'), ['200', '400', '401', '500'])

  // A too-low assurance level answers 401 (RFC 9470), so the step-up route lists no 403.
  assert.deepEqual(statuses('/mfa'), ['200', '400', '401', '500'])
  assert.deepEqual(statuses('/aal1'), ['200', '400', '401', '500'])
  // A role or a scope refuses a valid token with 403, with the challenge.
  for (const path of ['/role', '/scope', '/both']) {
    assert.deepEqual(statuses(path), ['200', '400', '401', '403', '500'], path)
    assert.ok(op(path).responses['403']!.headers?.['WWW-Authenticate'], path)
  }
  assert.deepEqual(op('/both').security, [{}, { bearerAuth: [] }])
  assert.deepEqual(op('/tagged').security, [{ bearerAuth: [] }])

  assert.deepEqual(op('/plain').security, [{ bearerAuth: [] }])
  assert.deepEqual(statuses('/plain'), ['200', '400', '401', '500'])
  assert.deepEqual(op('/public').security, [])
  assert.deepEqual(statuses('/public'), ['200', '400', '500'])

  const metadata = op('/.well-known/oauth-protected-resource')
  assert.deepEqual(metadata.security, [])
  await app.close()
})

test('a route protected by hand with protection.hook() documents its 401 with the challenge', async () => {
  const app = Fastify()
  const registry = createRegistry(app)
  await app.register(authgateProtect, { jwksUrl: new URL('http://127.0.0.1:1/jwks'), issuer: ISSUER })
  const ok = async () => ({ ok: true })
  const protection = app.authgateProtect!
  app.get('/hand', { onRequest: protection.hook('required') }, ok)
  app.get('/hand-role', { preHandler: [async () => undefined, protection.hook({ role: 'admin' })] }, ok)
  app.get('/hand-optional', { onRequest: protection.hook('optional') }, ok)
  // A route stating its own access keeps it.
  app.get(
    '/stated',
    {
      onRequest: protection.hook({ role: 'admin' }),
      schema: { access: { security: [{ bearerAuth: [] }], errors: { '401': {} } } },
    },
    ok,
  )
  app.get('/unhooked', ok)
  await app.ready()

  const doc = buildOpenApiDocument(registry.entries())
  const op = (path: string) => (doc.paths[path] as Record<string, Op>).get!
  assert.ok(op('/hand').responses['401']!.headers?.['WWW-Authenticate'])
  assert.ok(op('/hand-role').responses['401']!.headers?.['WWW-Authenticate'])
  assert.ok(op('/hand-role').responses['403']!.headers?.['WWW-Authenticate'])
  assert.deepEqual(op('/hand-optional').security, [{}, { bearerAuth: [] }])
  assert.equal(op('/stated').responses['401']!.headers, undefined)
  assert.equal(op('/stated').responses['403'], undefined)
  assert.equal(op('/unhooked').responses['401']!.headers, undefined)
  await app.close()
})
