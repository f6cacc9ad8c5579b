import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { AUTH_ROUTES, routeName, type AuthRoute } from '../src/auth/routes/index.ts'
import { optionalFieldPaths, withNullAt } from '../test/support/optional-fields.ts'
import { asRelayed, decisionOf, type Decision } from './support/relayed-answer.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

/** One request of a route: a body that means something to Supabase Auth, and the user it needs. */
interface Base {
  /** Relative to the prefix, query included. */
  url: string
  body: Record<string, unknown>
  /**
   * Bearer routes: the shared user, or a fresh one per send where a send leaves traces another
   * would see (enrolled factors).
   */
  user?: 'shared' | 'fresh'
}

const NO_FACTOR = '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71'
let n = 0
const fresh = () => `null-${process.pid}-${++n}@example.com`

/**
 * A base request per route with optional fields. Generated from the route table below: a route with
 * an optional field and no base here fails the test, so a new route cannot be left out.
 */
const BASES: Record<string, () => Base> = {
  'POST /signup': () => ({ url: '/signup', body: { email: fresh(), password: 'correct-horse-battery-7' } }),
  'POST /token': () => ({
    url: '/token?grant_type=password',
    body: { email: 'null-user@example.com', password: 'correct-horse-battery-7' },
  }),
  'POST /otp': () => ({ url: '/otp', body: { email: fresh() } }),
  'POST /magiclink': () => ({ url: '/magiclink', body: { email: fresh() } }),
  'POST /verify': () => ({ url: '/verify', body: { type: 'sms', phone: '15550000003', token: '000000' } }),
  'POST /recover': () => ({ url: '/recover', body: { email: fresh() } }),
  'POST /resend': () => ({ url: '/resend', body: { type: 'signup', email: fresh() } }),
  'PUT /user': () => ({ url: '/user', body: { data: { plan: 'pro' } }, user: 'shared' }),
  'POST /oauth/token': () => ({
    url: '/oauth/token',
    body: { grant_type: 'refresh_token', refresh_token: 'nope', client_id: randomUUID() },
  }),
  'POST /oauth/clients/register': () => ({
    url: '/oauth/clients/register',
    body: { client_name: 'nulls', redirect_uris: ['http://localhost:3000/cb'] },
  }),
  'POST /passkeys/authentication/options': () => ({ url: '/passkeys/authentication/options', body: {} }),
  'POST /factors': () => ({ url: '/factors', body: { factor_type: 'totp', friendly_name: 'app' }, user: 'fresh' }),
  'POST /factors/{factor_id}/challenge': () => ({
    url: `/factors/${NO_FACTOR}/challenge`,
    body: { channel: 'sms' },
    user: 'shared',
  }),
  'POST /factors/{factor_id}/verify': () => ({
    url: `/factors/${NO_FACTOR}/verify`,
    body: { challenge_id: randomUUID(), code: '123456' },
    user: 'shared',
  }),
  'POST /sso': () => ({ url: '/sso', body: { domain: 'example.com', skip_http_redirect: true } }),
}

/**
 * Every optional field of every request body, sent as `null` to Supabase Auth directly and through
 * authgate: the same status and error code both ways. Where the backend takes the `null`, authgate
 * forwards it; where the backend refuses it (a `null` password beside an e-mail), authgate refuses
 * it in the same words.
 */
describe('JSON null where Supabase Auth takes it, field by field from the route table', () => {
  let stack: Stack
  let shared = ''

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_nulls' })
    const res = await fetch(`${stack.backend.url}/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'null-user@example.com', password: 'correct-horse-battery-7' }),
    })
    assert.equal(res.status, 200)
    shared = await userToken()
  })

  after(async () => {
    await stack?.stop()
  })

  async function userToken(): Promise<string> {
    const res = await fetch(`${stack.backend.url}/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: fresh(), password: 'correct-horse-battery-7' }),
    })
    return ((await res.json()) as { access_token: string }).access_token
  }

  async function send(base: string, route: AuthRoute, make: () => Base, path: string[]): Promise<Decision> {
    const b = make()
    const token = b.user === 'fresh' ? await userToken() : b.user === 'shared' ? shared : undefined
    return decisionOf(base + b.url, route.method, JSON.stringify(withNullAt(b.body, path)), token)
  }

  const routes = AUTH_ROUTES.filter((r) => r.body && r.kind === 'typed' && optionalFieldPaths(r.body).length > 0)

  it('every route with optional fields has a base request here', () => {
    assert.deepEqual(
      routes.map(routeName).filter((name) => BASES[name] === undefined),
      [],
    )
  })

  for (const route of routes) {
    const make = BASES[routeName(route)]
    if (!make) continue
    for (const path of optionalFieldPaths(route.body)) {
      it(`${routeName(route)} ${path.join('.')}: null`, needsBackend, async () => {
        const straight = await send(stack.backend.url, route, make, path)
        const through = await send(`${stack.url}${stack.prefix}`, route, make, path)
        assert.ok(straight.status < 500, `Supabase Auth failed: ${JSON.stringify(straight)}`)
        assert.deepEqual(through, asRelayed(routeName(route), straight))
      })
    }
  }
})
