import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { routeUrl } from '../../src/observability/route-url.ts'

test("the route template is the one Fastify's routeOptions gives, for matched, wildcard and unmatched requests", async () => {
  const app = Fastify()
  const seen: [string | undefined, string | undefined][] = []
  app.addHook('onResponse', (request, _reply, done) => {
    seen.push([routeUrl(request), request.routeOptions.url])
    done()
  })
  app.get('/users/:id', async () => ({}))
  app.all('/rest/v1/*', async () => ({}))
  await app.register(
    async (child) => {
      child.get('/token', async () => ({}))
    },
    { prefix: '/auth' },
  )
  for (const url of ['/users/7', '/rest/v1/todos?select=*', '/auth/token', '/nowhere']) await app.inject(url)
  await app.close()
  assert.deepEqual(
    seen.map(([mine]) => mine),
    ['/users/:id', '/rest/v1/*', '/auth/token', undefined],
  )
  for (const [mine, theirs] of seen) assert.equal(mine, theirs)
})
