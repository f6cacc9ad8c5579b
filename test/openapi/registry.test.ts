import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { buildOpenApiDocument } from '../../src/docs-server/document.ts'
import { createRegistry } from '../../src/openapi/registry.ts'
import { registerDocs } from '../../src/docs-server/register-docs.ts'

const ok = async () => 'ok'

test('records every route with methods, full URL (prefix included), schema and config', async () => {
  const app = Fastify()
  const registry = createRegistry(app)
  app.get('/a', { schema: { tags: ['A'] }, config: { x: 1 } }, ok)
  app.route({ method: ['POST', 'PUT'], url: '/b', handler: ok })
  await app.register(async (child) => child.delete('/:id', ok), { prefix: '/things' })
  await app.ready()
  const entries = registry.entries()
  assert.deepEqual(
    entries.map((e) => [e.methods, e.url]),
    [
      [['GET'], '/a'],
      [['POST', 'PUT'], '/b'],
      [['DELETE'], '/things/:id'],
    ],
  )
  assert.deepEqual(entries[0]!.schema?.tags, ['A'])
  assert.equal((entries[0]!.config as { x?: number }).x, 1)
  await app.close()
})

test("Fastify's automatic HEAD routes are not recorded; a HEAD route declared by the application is", async () => {
  const app = Fastify()
  const registry = createRegistry(app)
  app.get('/auto', ok)
  app.get('/manual', { exposeHeadRoute: false }, ok)
  app.head('/manual', ok)
  await app.ready()
  assert.equal((await app.inject({ method: 'HEAD', url: '/auto' })).statusCode, 200, 'the automatic HEAD route exists')
  assert.deepEqual(
    registry.entries().map((e) => `${e.methods.join(',')} ${e.url}`),
    ['GET /auto', 'GET /manual', 'HEAD /manual'],
  )
  const doc = buildOpenApiDocument(registry.entries())
  assert.deepEqual(Object.keys(doc.paths['/auto']!), ['get'])
  assert.deepEqual(Object.keys(doc.paths['/manual']!).sort(), ['get', 'head'])
  await app.close()
})

test('routes with schema.hide are left out, and so are the documentation routes themselves', async () => {
  const app = Fastify()
  const registry = createRegistry(app)
  app.get('/visible', ok)
  app.get('/secret', { schema: { hide: true } }, ok)
  registerDocs(app, registry)
  await app.ready()
  assert.deepEqual(
    registry.entries().map((e) => e.url),
    ['/visible'],
  )
  const doc = (await app.inject('/openapi.json')).json()
  assert.deepEqual(Object.keys(doc.paths), ['/visible'])
  await app.close()
})

test('a route registered after the documentation was set up appears in the next document', async () => {
  const app = Fastify()
  const registry = createRegistry(app)
  app.get('/early', ok)
  registerDocs(app, registry)
  app.get('/late', ok)
  await app.register(async (child) => {
    child.get('/later-still', ok)
  })
  await app.ready()
  const doc = (await app.inject('/openapi.json')).json()
  assert.deepEqual(Object.keys(doc.paths), ['/early', '/late', '/later-still'])
  // By hand, even after start: the document is rebuilt on each request.
  registry.add({ methods: ['GET'], url: '/added' })
  assert.ok('/added' in (await app.inject('/openapi.json')).json().paths)
  await app.close()
})

test('creating the registry twice on one instance records each route once', async () => {
  const app = Fastify()
  const a = createRegistry(app)
  const b = createRegistry(app)
  assert.equal(a, b)
  app.get('/x', ok)
  await app.ready()
  assert.equal(a.entries().length, 1)
  await app.close()
})

test('inside a plugin: routes of that plugin and its children are seen, routes registered before it are not (documented limit)', async () => {
  const app = Fastify()
  app.get('/before', ok)
  let registry: ReturnType<typeof createRegistry> | undefined
  await app.register(
    async (plugin) => {
      registry = createRegistry(plugin)
      plugin.get('/inside', ok)
      await plugin.register(async (child) => child.get('/child', ok), { prefix: '/sub' })
    },
    { prefix: '/auth' },
  )
  app.get('/after-at-root', ok)
  await app.ready()
  assert.deepEqual(
    registry!.entries().map((e) => e.url),
    ['/auth/inside', '/auth/sub/child'],
  )
  await app.close()
})

test('the workaround for plugin use: a registry created on the root first sees the whole application', async () => {
  const app = Fastify()
  const registry = createRegistry(app)
  app.get('/before', ok)
  await app.register(
    async (plugin) => {
      plugin.get('/inside', ok)
      registerDocs(plugin, registry)
    },
    { prefix: '/auth' },
  )
  app.get('/after', ok)
  await app.ready()
  const doc = (await app.inject('/auth/openapi.json')).json()
  assert.deepEqual(Object.keys(doc.paths), ['/before', '/auth/inside', '/after'])
  await app.close()
})
