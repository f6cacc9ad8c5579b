import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { dropDatabase } from '../scripts/supabase-auth/postgres.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'

/**
 * examples/todo-app.ts as a person runs it (`node --conditions=authgate-source examples/todo-app.ts`)
 * in front of the real Supabase Auth: an account signed up through the example's own /auth routes,
 * its access token accepted by the todo routes that `defineRoute({ auth })` protects.
 */
const unavailable = await backendUnavailableReason()
const EXAMPLE = fileURLToPath(new URL('../examples/todo-app.ts', import.meta.url))

describe('the example application against the real Supabase Auth', { skip: unavailable ?? false }, () => {
  const database = `authgate_example_${process.pid}`
  let backend: SupabaseAuthServer
  let child: ChildProcess
  let url = ''

  before(async () => {
    const reservation = await reservePort()
    url = `http://localhost:${reservation.port}`
    // The example's issuer: what Supabase Auth's GOTRUE_JWT_ISSUER is, its public URL.
    backend = await startSupabaseAuth({ publicUrl: `${url}/auth`, database, startupTimeoutMs: 180_000 })
    await reservation.release()
    child = spawn(process.execPath, ['--conditions=authgate-source', EXAMPLE], {
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(reservation.port),
        HOST: '127.0.0.1',
        AUTHGATE_BACKEND_URL: backend.url,
        JWT_ISSUER: `${url}/auth`,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout!.setEncoding('utf8')
    for await (const chunk of child.stdout!) {
      out += chunk
      if (/todo app listening on /.test(out)) break
    }
    assert.match(out, /todo app listening on /)
    child.stdout!.resume()
  })

  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
    await backend?.stop()
    await dropDatabase(database).catch(() => undefined)
  })

  it('signs up through the example, and its token opens the protected routes', async () => {
    const signUp = await fetch(`${url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `example-${Date.now()}@example.com`, password: 'correct-horse-battery-9' }),
    })
    assert.equal(signUp.status, 200)
    const { access_token: token, user } = (await signUp.json()) as { access_token: string; user: { id: string } }
    const bearer = { authorization: `Bearer ${token}` }

    assert.equal((await fetch(`${url}/todos`)).status, 401)
    const created = await fetch(`${url}/todos`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Water the plants', owner_email: 'ada@example.com' }),
    })
    assert.equal(created.status, 201, await created.clone().text())
    const todos = (await (await fetch(`${url}/todos`, { headers: bearer })).json()) as Array<{ title: string }>
    assert.deepEqual(
      todos.map((t) => t.title),
      ['Water the plants'],
    )
    // The user's token is no service role's: the counts over everyone stay closed.
    const stats = await fetch(`${url}/admin/todo-stats`, { headers: bearer })
    assert.equal(stats.status, 403)
    assert.equal(((await stats.json()) as { error_code: string }).error_code, 'insufficient_role')
    assert.ok(user.id)
  })
})
