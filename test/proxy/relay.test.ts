import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { ownHeaders } from '../../src/proxy/relay.ts'

test("ownHeaders answers what getHeaders() does, from the reply's own headers when the response has none of its own", async (t) => {
  const app = Fastify()
  t.after(() => app.close())
  const seen: Record<string, unknown>[] = []
  app.get('/reply-only', (_request, reply) => {
    reply.header('x-request-id', 'r-1')
    seen.push({ ...ownHeaders(reply) }, reply.getHeaders())
    return 'ok'
  })
  app.get('/response-too', (_request, reply) => {
    reply.header('x-request-id', 'r-2')
    reply.raw.setHeader('x-own', '1')
    seen.push({ ...ownHeaders(reply) }, reply.getHeaders())
    return 'ok'
  })
  app.get('/response-emptied', (_request, reply) => {
    reply.header('x-request-id', 'r-3')
    reply.raw.setHeader('x-own', '1')
    reply.raw.removeHeader('x-own')
    seen.push({ ...ownHeaders(reply) }, reply.getHeaders())
    return 'ok'
  })
  for (const url of ['/reply-only', '/response-too', '/response-emptied']) {
    seen.length = 0
    assert.equal((await app.inject({ url })).statusCode, 200)
    assert.deepEqual(seen[0], { ...seen[1] }, url)
  }
  assert.deepEqual(seen[0], { 'x-request-id': 'r-3' })
})
