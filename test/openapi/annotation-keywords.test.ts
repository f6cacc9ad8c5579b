import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { Type } from 'typebox'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { authgate } from '../../src/plugin.ts'
import { OPENAPI_KEYWORDS, openApiAjvOptions } from '../../src/openapi/annotation-keywords.ts'
import { registerDocs } from '../../src/docs-server/index.ts'
import { createRegistry } from '../../src/openapi/index.ts'
import { defineRoute } from '../../src/routes-dsl/index.ts'

const backendUrl = parseBackendUrl('test', 'http://127.0.0.1:9')

/** An application's route whose types carry OpenAPI annotation keywords. */
const annotated = () =>
  defineRoute({
    method: 'POST',
    url: '/items',
    tags: ['Items'],
    request: Type.Object(
      {
        id: Type.String({ example: 'it_1', 'x-internal': true, externalDocs: { url: 'https://example.com' } }),
        n: Type.Integer({ xml: { name: 'count' }, minimum: 1 }),
      },
      { 'x-entity': 'item' },
    ),
    response: Type.Object({ id: Type.String({ example: 'it_1' }) }),
    handler: async (request) => ({ id: (request.body as { id: string }).id }),
  })

test('buildApp: OpenAPI annotation keywords on an application route neither stop start-up nor validation', async () => {
  const app = await buildApp({ config: { backendUrl }, rateLimit: false })
  app.route(annotated() as never)
  await app.ready()
  const ok = await app.inject({ method: 'POST', url: '/items', payload: { id: 'a', n: 2 } })
  assert.equal(ok.statusCode, 200, ok.body)
  // The keywords are annotations: validation still applies the real ones.
  const bad = await app.inject({ method: 'POST', url: '/items', payload: { id: 'a', n: 0 } })
  assert.equal(bad.statusCode, 400)
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
  const schema = JSON.stringify(doc.paths['/items'].post.requestBody)
  assert.match(schema, /"example":"it_1"/)
  await app.close()
})

test('without the keywords declared, Fastify refuses the route at start-up (what the option is for)', async () => {
  const app = Fastify()
  app.route(annotated() as never)
  await assert.rejects(async () => {
    await app.ready()
  }, /unknown keyword/)
})

test("one's own Fastify instance: openApiAjvOptions as the README shows", async () => {
  const { ajv, collect } = openApiAjvOptions()
  const app = Fastify({ ajv })
  collect(app)
  const registry = createRegistry(app)
  await app.register(authgate, { config: { backendUrl }, rateLimit: false })
  registerDocs(app, registry)
  app.route(annotated() as never)
  await app.ready()
  assert.equal((await app.inject({ method: 'POST', url: '/items', payload: { id: 'a', n: 1 } })).statusCode, 200)
  await app.close()
  assert.deepEqual([...OPENAPI_KEYWORDS], ['example', 'externalDocs', 'xml', 'discriminator'])
})
