import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import { Type } from 'typebox'
import { registerDocs } from '../../src/docs-server/index.ts'
import { createRegistry } from '../../src/openapi/index.ts'
import { defineRoute, inHeader, inPath, inQuery, splitFieldTags } from '../../src/routes-dsl/index.ts'

// What Fastify validates must not depend on whether the documentation listens: the same routes
// on an instance without a registry and on one with a registry and the docs routes must answer
// every request the same way.

type Routes = (app: FastifyInstance) => void

async function answers(routes: Routes, withRegistry: boolean, requests: InjectOptions[]) {
  const app = Fastify()
  if (withRegistry) createRegistry(app)
  routes(app)
  if (withRegistry) registerDocs(app, createRegistry(app))
  await app.ready()
  const out: Array<[number, unknown]> = []
  for (const r of requests) {
    const res = await app.inject(r)
    out.push([res.statusCode, res.json()])
  }
  await app.close()
  return out
}

const requests: InjectOptions[] = [
  { method: 'PUT', url: '/items/abc?dry=true', headers: { 'x-tenant': 't1' }, payload: { name: 'n' } },
  { method: 'PUT', url: '/items/ab', headers: { 'x-tenant': 't1' }, payload: { name: 'n' } },
  { method: 'PUT', url: '/items/abc?dry=maybe', headers: { 'x-tenant': 't1' }, payload: { name: 'n' } },
  { method: 'PUT', url: '/items/abc', payload: { name: 'n' } },
  { method: 'PUT', url: '/items/abc', headers: { 'x-tenant': 't1' }, payload: { name: '' } },
  { method: 'PUT', url: '/items/abc', headers: { 'x-tenant': 't1' }, payload: { id: 'abc', name: 'n' } },
]

function assertSame(a: Array<[number, unknown]>, b: Array<[number, unknown]>) {
  assert.deepEqual(b, a)
  // Both outcomes occur, so a route that validated nothing (or everything) would be caught.
  assert.ok(a.some(([s]) => s === 200) && a.some(([s]) => s === 400), JSON.stringify(a))
}

const Request = Type.Object({
  id: inPath(Type.String({ minLength: 3 })),
  dry: inQuery(Type.Optional(Type.Boolean())),
  'x-tenant': inHeader(Type.String()),
  name: Type.String({ minLength: 1 }),
})

test('a route from defineRoute validates the same with and without the docs registry', async () => {
  const routes: Routes = (app) =>
    app.route(
      defineRoute({
        method: 'PUT',
        url: '/items/:id',
        request: Request,
        handler: async (request) => ({ id: request.params.id, dry: request.query.dry ?? null, body: request.body }),
      }) as never,
    )
  const without = await answers(routes, false, requests)
  assertSame(without, await answers(routes, true, requests))
  assert.deepEqual(without[0], [200, { id: 'abc', dry: true, body: { name: 'n' } }])
})

test('a plain route split with splitFieldTags validates the same with and without the docs registry', async () => {
  const routes: Routes = (app) =>
    app.put('/items/:id', { schema: splitFieldTags({ body: Request }) }, async (request) => ({
      params: request.params,
      query: request.query,
      body: request.body,
    }))
  assertSame(await answers(routes, false, requests), await answers(routes, true, requests))
})

test('the registry changes no route schema: untagged `in` fields are refused by Fastify either way', async () => {
  const schema = { body: Type.Object({ id: Type.String({ in: 'path' }), name: Type.String() }) }
  const before = JSON.stringify(schema)
  const failures: string[] = []
  for (const withRegistry of [false, true]) {
    const app = Fastify()
    const registry = withRegistry ? createRegistry(app) : undefined
    app.post('/things/:id', { schema }, async () => ({ ok: true }))
    await assert.rejects(
      async () => app.ready(),
      (err: Error) => {
        failures.push(err.message)
        return /unknown keyword: "in"/.test(err.message)
      },
    )
    if (registry) assert.equal(registry.entries()[0]?.schema, schema, 'recorded as given, the same object')
    await app.close()
  }
  assert.equal(failures[0], failures[1])
  assert.equal(JSON.stringify(schema), before)
})
