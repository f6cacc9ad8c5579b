import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { buildTodoApp } from '../../examples/todo-app.ts'

/**
 * The example application: authgate's auth routes and the application's typed routes in one
 * service and one document.
 */
type Json = Record<string, any>
const bearer = { authorization: 'Bearer example-token' }

async function app() {
  return buildTodoApp({ config: { backendUrl: new URL('http://127.0.0.1:9') }, rateLimit: false })
}

test('the example application serves one document with the auth routes and its own', async () => {
  const a = await app()
  try {
    const res = await a.inject('/openapi.json')
    assert.equal(
      res.statusCode,
      200,
      'buildApp serves the document (src/app.ts must call createRegistry and registerDocs)',
    )
    const doc = res.json() as Json
    assert.equal(doc.info.title, 'Todo API with authgate')
    assert.deepEqual(doc.info.contact, { name: 'Example team', email: 'team@example.com' })
    for (const p of [
      '/auth/signup',
      '/auth/token',
      '/auth/oauth/token',
      '/auth/passkeys/{id}',
      '/todos',
      '/todos/{id}',
      '/todos/{id}/share',
      '/status',
    ])
      assert.ok(doc.paths[p], p)
    assert.equal(doc.paths['/todos'].get.operationId, 'getTodos')
    assert.equal(doc.paths['/todos/{id}'].get.operationId, 'getTodosById')
    assert.deepEqual(doc.paths['/hooks/todo-events'].post.security, [{ apiKey: [] }])
    assert.deepEqual(doc.components.securitySchemes.apiKey, {
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
      description: 'Key for service-to-service calls',
    })
    assert.ok(doc.paths['/admin/todo-stats'].get.responses['403'])
    assert.deepEqual(doc.paths['/status'].get.security, [])
    const tags = doc.tags.map((t: Json) => t.name)
    for (const t of ['Auth', 'OAuth', 'Passkey', 'Todos']) assert.ok(tags.includes(t), t)
    assert.equal((await a.inject('/docs')).statusCode, 200)
    assert.equal((await a.inject('/openapi-3.0.json')).json().openapi, '3.0.3')
  } finally {
    await a.close()
  }
})

test('the example routes validate as documented and work', async () => {
  const a = await app()
  try {
    assert.equal((await a.inject({ url: '/todos' })).statusCode, 401, 'bearer required')
    const created = await a.inject({
      method: 'POST',
      url: '/todos',
      headers: bearer,
      payload: { title: 'Water the plants', owner_email: 'ada@example.com', tags: ['home'] },
    })
    assert.equal(created.statusCode, 201, created.body)
    const todo = created.json() as Json
    assert.equal(todo.priority, 3)
    for (const bad of [
      { title: '', owner_email: 'ada@example.com' },
      { title: 'x', owner_email: 'not-an-email' },
      { title: 'x', owner_email: 'a@b.co', link: 'no url' },
    ]) {
      const r = await a.inject({ method: 'POST', url: '/todos', headers: bearer, payload: bad })
      assert.equal(r.statusCode, 400, JSON.stringify(bad))
      // The application's routes keep Fastify's own validation answer, not the gateway's.
      assert.equal(r.json().code, 'FST_ERR_VALIDATION', r.body)
    }
    // ... and Fastify's stock Ajv: an unknown property is removed (additionalProperties: false).
    const extra = await a.inject({
      method: 'POST',
      url: '/todos',
      headers: bearer,
      payload: { title: 'x', owner_email: 'a@b.co', extra: 1 },
    })
    assert.equal(extra.statusCode, 201, extra.body)
    assert.equal((extra.json() as Json).extra, undefined)
    await a.inject({ method: 'DELETE', url: `/todos/${(extra.json() as Json).id}`, headers: bearer })
    assert.equal((await a.inject({ url: '/todos?limit=0', headers: bearer })).statusCode, 400)
    const list = await a.inject({ url: '/todos?limit=5&done=false', headers: bearer })
    assert.deepEqual(
      list.json().map((t: Json) => t.id),
      [todo.id],
    )
    assert.equal((await a.inject({ url: `/todos/${todo.id}`, headers: bearer })).json().title, 'Water the plants')
    assert.equal((await a.inject({ url: '/todos/not-a-uuid', headers: bearer })).statusCode, 400)
    const patched = await a.inject({
      method: 'PATCH',
      url: `/todos/${todo.id}`,
      headers: bearer,
      payload: { done: true },
    })
    assert.equal(patched.json().done, true)
    assert.equal(
      (await a.inject({ method: 'PATCH', url: `/todos/${todo.id}`, headers: bearer, payload: { code: '123' } }))
        .statusCode,
      400,
      'len 6',
    )
    assert.equal((await a.inject({ url: `/todos/${todo.id}/share`, headers: bearer })).json().expires_in, 86400)
    assert.deepEqual((await a.inject({ url: '/admin/todo-stats', headers: bearer })).json(), { total: 1, done: 1 })
    assert.equal((await a.inject({ method: 'DELETE', url: `/todos/${todo.id}`, headers: bearer })).statusCode, 204)
    assert.equal((await a.inject({ url: `/todos/${todo.id}`, headers: bearer })).statusCode, 404)
    assert.deepEqual((await a.inject('/status')).json(), { ok: true })
  } finally {
    await a.close()
  }
})

test('the example runs as a program and listens', { timeout: 60_000 }, async () => {
  const file = fileURLToPath(new URL('../../examples/todo-app.ts', import.meta.url))
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', AUTHGATE_BACKEND_URL: 'http://127.0.0.1:9' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  try {
    let out = ''
    let address = ''
    child.stdout.setEncoding('utf8')
    for await (const chunk of child.stdout) {
      out += chunk
      const m = /todo app listening on (http:\/\/\S+)/.exec(out)
      if (m) {
        address = m[1]!
        break
      }
    }
    assert.ok(address, out)
    const status = await fetch(`${address}/status`)
    assert.deepEqual(await status.json(), { ok: true })
    const doc = await fetch(`${address}/openapi.json`)
    assert.equal(doc.status, 200)
  } finally {
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
})
