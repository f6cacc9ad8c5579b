import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { authgateProtect } from '../../src/protect/index.ts'
import { ISSUER } from './support.ts'

const options = { jwksUrl: new URL('http://127.0.0.1:1/jwks'), issuer: ISSUER }

test('authgateProtect is a named Fastify 5 plugin that other plugins can depend on', async () => {
  const meta = (authgateProtect as unknown as Record<symbol, { name: string; fastify: string }>)[
    Symbol.for('plugin-meta')
  ]
  assert.equal(meta?.name, 'authgate-protect')
  assert.equal(meta?.fastify, '5.x')

  const dependent = fp(async () => {}, { name: 'needs-protect', dependencies: ['authgate-protect'] })
  const without = Fastify()
  without.register(dependent)
  await assert.rejects(async () => without.ready(), /authgate-protect/)
  await without.close()

  const app = Fastify()
  await app.register(authgateProtect, options)
  await app.register(dependent)
  await app.ready()
  // Not encapsulated: the decorations reach the root instance.
  assert.ok(app.authgateProtect)
  assert.ok(app.hasRequestDecorator('user'))
  await app.close()
})

test('authgateProtect refuses a second registration', async () => {
  const app = Fastify()
  await app.register(authgateProtect, options)
  app.register(authgateProtect, options)
  await assert.rejects(async () => app.ready(), /registered twice/)
  await app.close()
})
