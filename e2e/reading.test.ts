import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { AUTH_ROUTES, LIMITABLE_ROUTES, routeName, type AuthRoute } from '../src/auth/routes/index.ts'
import { loadRateLimitSettings } from '../src/settings.ts'
import { afterBackendLogged, loggedRequests } from './support/backend-requests.ts'
import { asRelayed, decisionOf, type Decision } from './support/relayed-answer.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

/**
 * One reading of a request, the backend's (docs/decisions.md, D52–D54), asked of the real server.
 * Generated from the route table: each top-level field of each request body sent under a key in
 * another case, as `""` and as `null`, and each query parameter repeated, to Supabase Auth directly
 * and through authgate. `""`, `null` and a repeated parameter must get the same decision (status and
 * error code) both ways; a key in another case, which Supabase Auth would give to the field, is
 * refused by authgate and never reaches the backend. Then, on every route limited per account, the
 * spellings that used to pass a spent limit are sent once the limit is spent: each is refused or
 * counted, and Supabase Auth sees no more requests than the limit lets through.
 */

interface Base {
  /** Relative to the prefix, query included. */
  url: string
  body: Record<string, unknown>
  /** Bearer routes: the shared user, or a fresh one per send (enrolled factors are traces). */
  user?: 'shared' | 'fresh'
}

const NO_FACTOR = '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71'
let n = 0
const fresh = () => `reading-${process.pid}-${++n}@example.com`
const freshPhone = () => `1555${String(process.pid % 1000).padStart(3, '0')}${String(++n % 10_000).padStart(4, '0')}`
const PASSWORD = 'correct-horse-battery-7'

/** A request per typed route with a body; a route without one here fails the first test. */
const BASES: Record<string, () => Base> = {
  'POST /signup': () => ({
    url: '/signup?redirect_to=http://localhost:3000',
    body: { email: fresh(), password: PASSWORD },
  }),
  'POST /token': () => ({
    url: '/token?grant_type=password',
    // An unknown address: the account limit never sees one address twice here.
    body: { email: fresh(), password: PASSWORD },
  }),
  'POST /otp': () => ({ url: '/otp?redirect_to=http://localhost:3000', body: { email: fresh() } }),
  'POST /magiclink': () => ({ url: '/magiclink?redirect_to=http://localhost:3000', body: { email: fresh() } }),
  'POST /verify': () => ({ url: '/verify', body: { type: 'sms', phone: freshPhone(), token: '000000' } }),
  'POST /recover': () => ({ url: '/recover?redirect_to=http://localhost:3000', body: { email: fresh() } }),
  'POST /resend': () => ({ url: '/resend', body: { type: 'signup', email: fresh() } }),
  'PUT /user': () => ({ url: '/user', body: { data: { plan: 'pro' } }, user: 'shared' }),
  'POST /oauth/token': () => ({
    url: '/oauth/token',
    body: { grant_type: 'refresh_token', refresh_token: 'nope', client_id: randomUUID() },
  }),
  'POST /oauth/clients/register': () => ({
    url: '/oauth/clients/register',
    body: { client_name: 'reading', redirect_uris: ['http://localhost:3000/cb'] },
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
  'POST /passkeys/registration/verify': () => ({
    url: '/passkeys/registration/verify',
    body: { challenge_id: randomUUID(), credential: { id: 'x', rawId: 'x', type: 'public-key', response: {} } },
    user: 'shared',
  }),
  'POST /passkeys/authentication/verify': () => ({
    url: '/passkeys/authentication/verify',
    body: { challenge_id: randomUUID(), credential: { id: 'x', rawId: 'x', type: 'public-key', response: {} } },
  }),
  'PATCH /passkeys/{id}': () => ({ url: `/passkeys/${NO_FACTOR}`, body: { friendly_name: 'laptop' }, user: 'shared' }),
  'POST /oauth/authorizations/{authorization_id}/consent': () => ({
    url: `/oauth/authorizations/${NO_FACTOR}/consent`,
    body: { action: 'approve' },
    user: 'shared',
  }),
  'POST /sso': () => ({ url: '/sso', body: { domain: 'example.com', skip_http_redirect: true } }),
}

/** The routes with a query and no body: their query is read and repeated like the others'. */
const QUERY_BASES: Record<string, () => Base> = {
  // A fresh user: a sign-out ends the session a shared token would need afterwards.
  'POST /logout': () => ({ url: '/logout?scope=local', body: {}, user: 'fresh' }),
  'GET /authorize': () => ({ url: '/authorize?provider=github&redirect_to=http://localhost:3000', body: {} }),
  'GET /verify': () => ({ url: '/verify?token=abc&type=signup&redirect_to=http://localhost:3000', body: {} }),
  'GET /oauth/authorize': () => ({
    url: `/oauth/authorize?client_id=${randomUUID()}&redirect_uri=http://localhost:3000/cb&response_type=code`,
    body: {},
  }),
  'GET /user/identities/authorize': () => ({
    url: '/user/identities/authorize?provider=github&skip_http_redirect=true',
    body: {},
    user: 'shared',
  }),
  'GET /sso/saml/metadata': () => ({ url: '/sso/saml/metadata?download=true', body: {} }),
  'DELETE /user/oauth/grants': () => ({
    url: `/user/oauth/grants?client_id=${randomUUID()}`,
    body: {},
    user: 'shared',
  }),
}

type Schema = Record<string, unknown>

const propertiesOf = (route: AuthRoute): Record<string, Schema> =>
  ((route.body as Schema | undefined)?.properties as Record<string, Schema> | undefined) ?? {}

/** Whether a property's schema takes strings (where `""` is a value of the field's own type). */
function takesStrings(s: Schema): boolean {
  if (s.type === 'string' || (Array.isArray(s.type) && s.type.includes('string'))) return true
  return Array.isArray(s.anyOf) && (s.anyOf as Schema[]).some(takesStrings)
}

/** A value of a JSON type the field's schema does not admit (undefined where it names no type). */
function otherTyped(s: Schema): unknown {
  const types = new Set<string>()
  const collect = (x: Schema): boolean => {
    if (typeof x.type === 'string') types.add(x.type)
    else if (Array.isArray(x.type)) for (const t of x.type as string[]) types.add(t)
    else if (Array.isArray(x.anyOf)) return (x.anyOf as Schema[]).every(collect)
    else return false
    return true
  }
  if (!collect(s)) return undefined
  if (!types.has('number') && !types.has('integer')) return 12345
  if (!types.has('string')) return 'x'
  return types.has('boolean') ? undefined : true
}

/** A key the backend gives to the field and authgate does not read as it: its upper-case form. */
const folded = (field: string) => field.toUpperCase()

describe('one reading of a request, the backend’s, field by field from the route table', () => {
  let stack: Stack
  let shared = ''
  const counts = { folded: 0, empty: 0, null: 0, repeated: 0, nul: 0, typed: 0, typedElsewhere: 0 }
  const limited: string[] = []

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({
      database: 'authgate_e2e_reading',
      // Supabase Auth logs each request it served: its own count of what reached it.
      extraEnv: { GOTRUE_LOG_LEVEL: 'info' },
      rateLimit: loadRateLimitSettings({
        AUTHGATE_RATE_LIMITED_ROUTES: 'none',
        AUTHGATE_ACCOUNT_RATE_LIMIT: '3/1h',
        AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT: '3/1h',
        // The budgets count every message of the whole file: they are tested elsewhere.
        AUTHGATE_EMAIL_BUDGET: 'off',
        AUTHGATE_SMS_BUDGET: 'off',
      }),
    })
    const res = await fetch(`${stack.backend.url}/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'reading-user@example.com', password: PASSWORD }),
    })
    assert.equal(res.status, 200)
    shared = await userToken()
  })

  after(async () => {
    if (unavailable === undefined)
      console.log(
        `reading: ${counts.folded} case-folded keys refused, ${counts.empty} "" and ${counts.null} null fields, ${counts.typed} fields of another JSON type (${counts.typedElsewhere} more refused where Supabase Auth decides before decoding or does not decode the field) and ${counts.repeated} repeated query parameters answered alike, ${counts.nul} NUL characters refused where Supabase Auth fails\n${limited.join('\n')}`,
      )
    await stack?.stop()
  })

  async function userToken(): Promise<string> {
    const res = await fetch(`${stack.backend.url}/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: fresh(), password: PASSWORD }),
    })
    return ((await res.json()) as { access_token: string }).access_token
  }

  async function send(base: string, route: AuthRoute, b: Base, body: string, url = b.url): Promise<Decision> {
    const token = b.user === 'fresh' ? await userToken() : b.user === 'shared' ? shared : undefined
    return decisionOf(base + url, route.method, route.body ? body : undefined, token)
  }

  // Supabase Auth's own decision, as authgate relays it (its OAuth token errors are RFC 6749's).
  const direct = async (route: AuthRoute, b: Base, body: string, url?: string) =>
    asRelayed(routeName(route), await send(stack.backend.url, route, b, body, url))
  const through = (route: AuthRoute, b: Base, body: string, url?: string) =>
    send(`${stack.url}${stack.prefix}`, route, b, body, url)

  /**
   * Requests Supabase Auth served on `path` (its own log), once everything sent before has been
   * logged: a `GET /settings` sent last is the barrier (it logs no `/health`).
   */
  async function served(path: string): Promise<number> {
    await afterBackendLogged(
      () => stack.backend.logs(),
      (r) => r.path === '/settings',
      async () => {
        await (await fetch(`${stack.backend.url}/settings`)).arrayBuffer()
      },
    )
    return loggedRequests(stack.backend.logs()).filter((r) => r.path === path).length
  }

  const routes = AUTH_ROUTES.filter((r) => r.body && r.kind === 'typed' && Object.keys(propertiesOf(r)).length > 0)

  it('every typed route with body fields has a base request here', () => {
    assert.deepEqual(
      routes.map(routeName).filter((name) => BASES[name] === undefined),
      [],
    )
  })

  for (const route of routes) {
    const make = BASES[routeName(route)]
    if (!make) continue
    for (const [field, schema] of Object.entries(propertiesOf(route))) {
      it(`${routeName(route)} ${field}: under ${folded(field)}, as "" and as null`, needsBackend, async () => {
        const b = make()
        const value = field in b.body ? b.body[field] : (schema.examples as unknown[] | undefined)?.[0]
        const backendPath = new URL(b.url, 'http://x').pathname
        if (value !== undefined) {
          const { [field]: _, ...rest } = b.body
          const body = JSON.stringify({ ...rest, [folded(field)]: value })
          const before = await served(backendPath)
          const answer = await through(route, b, body)
          assert.equal(answer.status, 400, `${body}: ${JSON.stringify(answer)}`)
          assert.equal(answer.code, 'validation_failed')
          assert.equal(await served(backendPath), before, `${body} reached Supabase Auth`)
          counts.folded++
        }
        // `null` where a client may leave the field out; `""` there too on string fields, and on the
        // fields the route's handler reads as absent when empty.
        const optional = !((route.body as Schema).required as string[] | undefined)?.includes(field)
        const spellings: unknown[] = [
          ...((optional && takesStrings(schema)) || route.emptyIsAbsent?.includes(field) ? [''] : []),
          ...(optional ? [null] : []),
        ]
        for (const spelling of spellings) {
          // A fresh base per send: an address that received a message cannot get another at once.
          const one: Base = make()
          const other: Base = make()
          const straight = await direct(route, one, JSON.stringify({ ...one.body, [field]: spelling }))
          const gated = await through(route, other, JSON.stringify({ ...other.body, [field]: spelling }))
          const body: string = JSON.stringify({ ...one.body, [field]: spelling })
          assert.ok(straight.status < 500, `Supabase Auth failed on ${body}: ${JSON.stringify(straight)}`)
          assert.deepEqual(gated, straight, body)
          counts[spelling === '' ? 'empty' : 'null']++
        }
      })
    }
  }

  // A field of another JSON type fails Go's decoding before anything else is judged: Supabase Auth
  // answers 400 bad_json (the OAuth token endpoint its invalid_request), and so must authgate.
  for (const route of routes) {
    const make = BASES[routeName(route)]
    if (!make) continue
    for (const [field, schema] of Object.entries(propertiesOf(route))) {
      const wrong = otherTyped(schema)
      if (wrong === undefined) continue
      it(`${routeName(route)} ${field}: as ${JSON.stringify(wrong)}, another JSON type`, needsBackend, async () => {
        const one = make()
        const other = make()
        const straight = await direct(route, one, JSON.stringify({ ...one.body, [field]: wrong }))
        const gated = await through(route, other, JSON.stringify({ ...other.body, [field]: wrong }))
        if (straight.status === 400 && (straight.code === 'bad_json' || straight.code === 'invalid_request')) {
          assert.deepEqual(gated, straight, `${field}: ${JSON.stringify(wrong)}`)
          counts.typed++
          return
        }
        // Supabase Auth decided before decoding (a factor, an SSO provider, an OAuth client it does not
        // find), or its struct does not decode the field (another grant's, the CAPTCHA's): authgate
        // still refuses the value its schema does not admit.
        assert.equal(gated.status, 400, `${field}: ${JSON.stringify(gated)}`)
        assert.ok(
          ['bad_json', 'validation_failed', 'invalid_request'].includes(gated.code as string),
          String(gated.code),
        )
        counts.typedElsewhere++
      })
    }
  }

  for (const route of AUTH_ROUTES.filter((r) => r.query)) {
    const make = BASES[routeName(route)] ?? QUERY_BASES[routeName(route)]
    it(`${routeName(route)} has a base request for its query`, () => assert.ok(make, routeName(route)))
    if (!make) continue
    const query = (route.query as Schema | undefined)?.properties as Record<string, Schema> | undefined
    for (const [param, schema] of Object.entries(query ?? {})) {
      it(`${routeName(route)} ?${param} repeated`, needsBackend, async () => {
        const b = make()
        const url = new URL(b.url, 'http://x')
        const first = url.searchParams.get(param) ?? String((schema.examples as unknown[] | undefined)?.[0] ?? 'x')
        const others = [
          ...new Set(
            ((schema.enum as string[] | undefined) ?? ['https://elsewhere.example/']).filter((v) => v !== first),
          ),
        ]
        for (const second of others.slice(0, 2)) {
          for (const pair of [
            [first, second],
            [second, first],
          ]) {
            const q = new URLSearchParams(url.search)
            q.delete(param)
            for (const v of pair) q.append(param, v)
            const target = `${url.pathname}?${q}`
            const one: Base = make()
            const other: Base = make()
            const straight = await direct(route, one, JSON.stringify(one.body), target)
            const gated = await through(route, other, JSON.stringify(other.body), target)
            assert.ok(straight.status < 500, `Supabase Auth failed on ${target}: ${JSON.stringify(straight)}`)
            assert.deepEqual(gated, straight, target)
            counts.repeated++
          }
        }
      })
    }
  }

  /**
   * The fields whose value Supabase Auth stores (the route table's `nulRefused`): a NUL character in
   * one makes Supabase Auth answer 500; authgate answers 400 and forwards nothing.
   */
  for (const route of AUTH_ROUTES.filter((r) => r.nulRefused !== undefined)) {
    for (const field of route.nulRefused!) {
      it(
        `${routeName(route)} ${field} with a NUL character: 500 from Supabase Auth, 400 from authgate`,
        needsBackend,
        async () => {
          const make = BASES[routeName(route)]!
          const spelled = (b: Base) => {
            const value = field === 'data' ? { note: 'a\u0000b' } : 'pkce_a\u0000b'
            // A token hash comes alone with its type.
            const body = field === 'token_hash' ? { type: 'email', token_hash: value } : { ...b.body, [field]: value }
            return JSON.stringify(body)
          }
          const one: Base = make()
          const straight = await direct(route, one, spelled(one))
          assert.equal(straight.status, 500, JSON.stringify(straight))
          const other: Base = make()
          const before = await served(new URL(other.url, 'http://x').pathname)
          const gated = await through(route, other, spelled(other))
          assert.deepEqual(gated, { status: 400, code: 'validation_failed' })
          assert.equal(await served(new URL(other.url, 'http://x').pathname), before)
          counts.nul++
        },
      )
    }
  }

  /**
   * Per-account limits keyed on the value Supabase Auth acts on: the victim's limit (3 an hour) is
   * spent, then every spelling that names the victim to the backend is refused (400) or counted
   * (429), and the backend's log shows the three requests the limit allowed and no more.
   */
  const victimSpellings = (route: string, victim: string): Array<[string, string]> => {
    const extra = route === 'POST /token' || route === 'POST /signup' ? `,"password":"${PASSWORD}"` : ''
    const type = route === 'POST /resend' ? ',"type":"signup"' : ''
    const tail = extra + type
    return [
      ['', `{"email":"${victim}"${tail}}`],
      ['', `{"Email":"${victim}"${tail}}`],
      ['', `{"EMAIL":"${victim}"${tail}}`],
      ['', `{"email":"decoy-${victim}","Email":"${victim}"${tail}}`],
      ['', `{"email":"${victim}","email":null${tail}}`],
      ['', `{"email":"${victim.toUpperCase()}"${tail}}`],
      ...(route === 'POST /token'
        ? ([
            ['&grant_type=password', `{"email":"${victim}"${tail}}`],
            ['&grant_type=refresh_token', `{"email":"${victim}"${tail}}`],
            [';&grant_type=password', `{"email":"${victim}"${tail}}`],
          ] as Array<[string, string]>)
        : []),
    ]
  }

  for (const route of LIMITABLE_ROUTES.filter((r) => r.account !== undefined).map((r) => r.key)) {
    it(`${route}: the spent limit of an account holds whatever the spelling`, needsBackend, async () => {
      const path = route.split(' ')[1]!
      const victim = `victim-${path.slice(1)}-${process.pid}@example.com`
      const base = route === 'POST /token' ? `${path}?grant_type=password` : path
      const before = await served(path)
      const spent: Decision[] = []
      for (let i = 0; i < 3; i++) spent.push(await post(base, victimSpellings(route, victim)[0]![1]))
      const after: Decision[] = []
      for (const [suffix, body] of victimSpellings(route, victim)) after.push(await post(base + suffix, body))
      // Whatever Supabase Auth answered the first three (its own once-a-minute rule for messages
      // among them), authgate let them through.
      assert.ok(
        spent.every((a) => a.code !== 'over_request_rate_limit' && a.status < 500),
        `${route} spend: ${JSON.stringify(spent)}`,
      )
      assert.ok(after.every(refusedByAuthgate), `${route} after the limit: ${JSON.stringify(after)}`)
      assert.equal((await served(path)) - before, 3, `${route}: requests that reached Supabase Auth`)
      limited.push(`${route}: 3 reached, ${after.length} refused or counted`)
    })
  }

  it('POST /otp: the spent limit of a phone holds against a second Phone key', needsBackend, async () => {
    const phone = freshPhone()
    const before = await served('/otp')
    for (let i = 0; i < 3; i++)
      assert.notEqual((await post('/otp', `{"phone":"${phone}"}`)).code, 'over_request_rate_limit')
    assert.ok(refusedByAuthgate(await post('/otp', `{"phone":"15550009999","Phone":"${phone}"}`)))
    assert.ok(refusedByAuthgate(await post('/otp', `{"phone":"+${phone}"}`)))
    assert.equal((await served('/otp')) - before, 3)
  })

  it(
    'Supabase Auth folds the long s and the Kelvin sign into field names; authgate refuses both',
    needsBackend,
    async () => {
      const route = AUTH_ROUTES.find((r) => routeName(r) === 'POST /token')!
      const password: Base = { url: '/token?grant_type=password', body: {} }
      const signIn = `{"email":"reading-user@example.com","pa\u017f\u017fword":"${PASSWORD}"}`
      // A session: the backend read `paſſword` as the password.
      assert.equal((await direct(route, password, signIn)).status, 200)
      assert.deepEqual(await through(route, password, signIn), { status: 400, code: 'validation_failed' })
      const session = await fetch(`${stack.backend.url}/token?grant_type=password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'reading-user@example.com', password: PASSWORD }),
      })
      const { refresh_token } = (await session.json()) as { refresh_token: string }
      const refresh: Base = { url: '/token?grant_type=refresh_token', body: {} }
      const kelvin = `{"refresh_to\u212aen":"${refresh_token}"}`
      assert.deepEqual(await through(route, refresh, kelvin), { status: 400, code: 'validation_failed' })
      // A new session: the backend read `refresh_toKen` (Kelvin sign) as the refresh token.
      assert.equal((await direct(route, refresh, kelvin)).status, 200)
    },
  )

  it("Supabase's Go client: OTP and verify with the other address empty pass through", needsBackend, async () => {
    const email = fresh()
    const otp = await post('/otp', `{"email":"${email}","phone":""}`)
    assert.equal(otp.status, 200, JSON.stringify(otp))
    const verify = await fetch(`${stack.url}${stack.prefix}/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'email', email, phone: '', token: '000000' }),
    })
    // Supabase Auth's own verdict on a wrong code, not authgate's refusal of the empty phone.
    assert.equal(verify.status, 403, await verify.text())
  })

  it(
    'a body that starts with a byte order mark: refused as Supabase Auth refuses it, never forwarded',
    needsBackend,
    async () => {
      const route = AUTH_ROUTES.find((r) => routeName(r) === 'POST /token')!
      const body = `\ufeff${JSON.stringify({ email: fresh(), password: PASSWORD })}`
      const straight = await direct(route, BASES['POST /token']!(), body)
      assert.deepEqual(straight, { status: 400, code: 'bad_json' })
      const before = await served('/token')
      assert.deepEqual(await through(route, BASES['POST /token']!(), body), straight)
      assert.equal(await served('/token'), before, 'the body reached Supabase Auth')
    },
  )

  it(
    'a body that is JSON but no object: null read as no field, anything else refused, as Supabase Auth reads them',
    needsBackend,
    async () => {
      const route = AUTH_ROUTES.find((r) => routeName(r) === 'PUT /user')!
      for (const body of ['null', ' null ', '[]', '[{"data":{}}]', '1', '"x"', 'true']) {
        const b = BASES['PUT /user']!()
        const straight = await direct(route, b, body)
        assert.equal(straight.status, body.trim() === 'null' ? 200 : 400, `${body}: ${JSON.stringify(straight)}`)
        assert.deepEqual(await through(route, b, body), straight, body)
      }
    },
  )

  /** authgate's own refusal: the body's spelling (400) or the account's spent limit (429). */
  const refusedByAuthgate = (a: Decision) =>
    (a.status === 400 && (a.code === 'validation_failed' || a.code === 'bad_json')) ||
    (a.status === 429 && a.code === 'over_request_rate_limit')

  const post = (url: string, body: string): Promise<Decision> =>
    decisionOf(`${stack.url}${stack.prefix}${url}`, 'POST', body)
})
