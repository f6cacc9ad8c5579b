import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ISSUER, signHs256 } from '../protect/support.ts'
import { loadTodoApp } from '../support/examples.ts'

/**
 * The example application: authgate's auth routes and the application's typed routes in one
 * service and one document.
 */
type Json = Record<string, any>
// Tokens as Supabase Auth signs them with the project secret (HS256): two users and the service role.
const SECRET = 'example-app-secret-at-least-32-characters'
const ADA = '8d0b1f0e-5c4e-4a5e-9a44-0b0b6f4c3b11'
const GRACE = '5b3e8a52-3f0c-4d55-a7a1-43c9b0a1f0de'
const asUser = async (sub: string) => ({ authorization: `Bearer ${await signHs256(SECRET, { sub })}` })
const serviceRole = async () => ({ authorization: `Bearer ${await signHs256(SECRET, { role: 'service_role' })}` })
let bearer: Record<string, string>

async function app() {
  bearer = await asUser(ADA)
  const { buildTodoApp } = await loadTodoApp()
  return buildTodoApp({
    config: { backendUrl: new URL('http://127.0.0.1:9') },
    rateLimit: false,
    protect: { issuer: ISSUER, secret: SECRET, jwks: false },
  })
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
    const anonymous = await a.inject({ url: '/todos' })
    assert.equal(anonymous.statusCode, 401, 'bearer required')
    assert.equal(anonymous.json().error_code, 'no_authorization')
    // A bearer that is no token of Supabase Auth's is refused too (a presence check would let it in).
    const forged = await a.inject({ url: '/todos', headers: { authorization: 'Bearer example-token' } })
    assert.equal(forged.statusCode, 401)
    assert.equal(forged.json().error_code, 'bad_jwt')
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
    // Another user has a list of their own.
    assert.deepEqual((await a.inject({ url: '/todos', headers: await asUser(GRACE) })).json(), [])
    assert.equal((await a.inject({ url: `/todos/${todo.id}`, headers: await asUser(GRACE) })).statusCode, 404)
    // The counts over every user are the service role's only.
    const refused = await a.inject({ url: '/admin/todo-stats', headers: bearer })
    assert.equal(refused.statusCode, 403)
    assert.equal(refused.json().error_code, 'insufficient_role')
    assert.deepEqual((await a.inject({ url: '/admin/todo-stats', headers: await serviceRole() })).json(), {
      total: 1,
      done: 1,
    })
    assert.equal((await a.inject({ method: 'DELETE', url: `/todos/${todo.id}`, headers: bearer })).statusCode, 204)
    assert.equal((await a.inject({ url: `/todos/${todo.id}`, headers: bearer })).statusCode, 404)
    assert.deepEqual((await a.inject('/status')).json(), { ok: true })
  } finally {
    await a.close()
  }
})

test('the example runs as a program and listens', { timeout: 60_000 }, async () => {
  const file = fileURLToPath(new URL('../../examples/todo-app.ts', import.meta.url))
  const child = spawn(process.execPath, ['--conditions=authgate-source', file], {
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
