import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { runPsql, postgresTarget } from '../scripts/supabase-auth/postgres.ts'
import { backendUnavailableReason, startSupabaseAuth } from './support/supabase-auth.ts'
import type { SupabaseAuthServer } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
// Skipping each test (not the suite) makes the runner count them as skipped, with the reason.
const needsBackend = { skip: unavailable }

describe('real Supabase Auth backend', () => {
  let server: SupabaseAuthServer

  before(async () => {
    if (unavailable !== undefined) return
    // Nothing listens on this public URL: only what the server derives from it is checked.
    server = await startSupabaseAuth({ publicUrl: 'http://localhost:58080/auth' })
  })

  after(async () => {
    await server?.stop()
  })

  it('applied its migrations to the prepared database', needsBackend, async () => {
    const tables = await runPsql(
      postgresTarget(),
      server.database,
      "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.tables " +
        "WHERE table_schema = 'auth' AND table_name IN ('users', 'schema_migrations', 'webauthn_credentials')",
    )
    assert.equal(tables, 'schema_migrations,users,webauthn_credentials')
    const applied = Number(
      await runPsql(postgresTarget(), server.database, 'SELECT count(*) FROM auth.schema_migrations'),
    )
    assert.ok(applied > 60, `only ${applied} migrations applied`)
  })

  it('answers GET /health with JSON', needsBackend, async () => {
    const response = await fetch(`${server.url}/health`)
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
    const body = (await response.json()) as { name?: unknown; version?: unknown }
    assert.equal(body.name, 'GoTrue')
    assert.equal(typeof body.version, 'string')
  })

  it('answers GET /settings with the features tests rely on', needsBackend, async () => {
    const response = await fetch(`${server.url}/settings`)
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
    const body = (await response.json()) as Record<string, unknown>
    assert.equal(body.passkeys_enabled, true)
    assert.equal(body.mailer_autoconfirm, true)
    assert.equal(body.phone_autoconfirm, false)
    assert.deepEqual(
      { email: true, phone: true, anonymous_users: true, github: true },
      pick(body.external as Record<string, unknown>, ['email', 'phone', 'anonymous_users', 'github']),
    )
  })

  it('publishes the asymmetric signing key in its JWKS', needsBackend, async () => {
    const response = await fetch(`${server.url}/.well-known/jwks.json`)
    assert.equal(response.status, 200)
    const body = (await response.json()) as { keys: Array<{ kid?: string; alg?: string; d?: unknown }> }
    const key = body.keys.find((candidate) => candidate.kid === server.signingJwk.kid)
    assert.ok(key, 'signing key missing from JWKS')
    assert.equal(key.alg, 'ES256')
    assert.equal(key.d, undefined, 'JWKS must not leak the private part')
  })

  it('issues ES256 access tokens on password-less anonymous sign-in', needsBackend, async () => {
    const response = await fetch(`${server.url}/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7' },
      body: JSON.stringify({ data: {} }),
    })
    assert.equal(response.status, 200)
    const body = (await response.json()) as { access_token?: string }
    assert.ok(body.access_token)
    const header = JSON.parse(Buffer.from(body.access_token.split('.')[0] ?? '', 'base64url').toString()) as {
      alg?: string
      kid?: string
    }
    assert.deepEqual(header.alg, 'ES256')
    assert.equal(header.kid, server.signingJwk.kid)
  })

  it('accepts the HS256 service-role token on the admin API', needsBackend, async () => {
    const response = await fetch(`${server.url}/admin/users`, {
      headers: { authorization: `Bearer ${server.serviceRoleJwt()}` },
    })
    assert.equal(response.status, 200)
    const body = (await response.json()) as { users?: unknown[] }
    assert.ok(Array.isArray(body.users))
  })

  it('redirects GET /authorize?provider=github to the provider with the public callback', needsBackend, async () => {
    const response = await fetch(`${server.url}/authorize?provider=github`, { redirect: 'manual' })
    assert.equal(response.status, 302)
    const location = new URL(response.headers.get('location') ?? '')
    assert.equal(location.host, 'github.com')
    assert.equal(location.searchParams.get('redirect_uri'), 'http://localhost:58080/auth/callback')
  })
})

function pick(source: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((key) => [key, source[key]]))
}
