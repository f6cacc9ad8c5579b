import assert from 'node:assert/strict'
import { request } from 'node:http'
import { test } from 'node:test'
import { AuthgateConfigError } from '../../src/config/env.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { PUBLISHABLE, values, withServices } from './support.ts'

/** A GET of /rest/v1/todos with the headers exactly as listed (a name twice is sent twice): its status. */
function rawGet(base: string, headers: Array<[string, string]>): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${base}/rest/v1/todos`)
    const req = request(url, { headers: ['host', url.host, ...headers.flat()] }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
    })
    req.on('error', reject)
    req.end()
  })
}

const limited = (routes: string) =>
  loadRateLimitSettings({ AUTHGATE_RATE_LIMITED_ROUTES: 'none', AUTHGATE_RATE_LIMIT_ROUTES: routes })

test('a service route limited per client: its methods share one bucket, refusals in our shape, other services untouched', async () => {
  const h = await withServices({}, {}, { rateLimit: limited('GET /rest/v1/*=2/1m,POST /rest/v1/*=2/1m') })
  try {
    const get = () =>
      fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE, 'x-supabase-api-version': '2023-01-01' } })
    const first = await get()
    assert.equal(first.status, 200)
    assert.match(first.headers.get('ratelimit-policy')!, /^"rest-v1";q=2;w=60/)
    assert.equal((await get()).status, 200)
    const post = await fetch(`${h.url}/rest/v1/todos`, {
      method: 'POST',
      headers: { apikey: PUBLISHABLE, 'content-type': 'application/json' },
      body: '{}',
    })
    assert.equal(post.status, 429, 'the POST draws on the bucket the GETs emptied')
    const refused = await get()
    assert.equal(refused.status, 429)
    assert.ok(Number(refused.headers.get('retry-after')) > 0)
    // postgrest-js reads `message`: the legacy shape is never sent on a service route (D74).
    assert.deepEqual(await refused.json(), {
      code: 'over_request_rate_limit',
      message: 'Request rate limit reached',
    })
    assert.equal(h.upstream.requests.filter((r) => r.target.startsWith('/rest/')).length, 2)
    // The service's version header went on as the client sent it.
    assert.equal(h.upstream.requests[0]!.headers['x-supabase-api-version'], '2023-01-01')
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${h.url}/storage/v1/object/public/b/f`)).status, 200)
    const text = await (await fetch(`${h.url}/metrics`)).text()
    assert.match(text, /authgate_rate_limit_denied_total\{limit="client",route="GET \/rest\/v1\/\*"\} 1/)
    assert.match(text, /authgate_rate_limit_denied_total\{limit="client",route="POST \/rest\/v1\/\*"\} 1/)
  } finally {
    await h.close()
  }
})

test('service routes in AUTHGATE_RATE_LIMIT_ROUTES are checked like the auth routes', () => {
  assert.equal(limited('DELETE /storage/v1/*=10/1s').routes.get('DELETE /storage/v1/*')?.limit, 10)
  assert.equal(limited('GET /graphql/v1=10/1s').routes.size, 1)
  assert.throws(() => limited('GET /rest/v1/todos=10/1s'), AuthgateConfigError, 'a table, not the route')
  assert.throws(
    () => limited('GET /rest/v1/*=10/1s,POST /rest/v1/*=5/1s'),
    /share one bucket \(same template\) and need the same rate/,
  )
})

test("per user: the verified token's sub has its own bucket; a forged or missing token counts per client only", async () => {
  const { generateKeyPair, exportJWK, SignJWT } = await import('jose')
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }
  const stranger = await generateKeyPair('ES256')
  const token = (sub: string, key = privateKey) =>
    new SignJWT({ role: 'authenticated' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setSubject(sub)
      .setExpirationTime('1h')
      .sign(key)
  const h = await withServices({ userRateLimitRoutes: 'GET /rest/v1/*=2/1m' }, {}, { rateLimit: limited('') })
  try {
    h.upstream.handler = (req, res) => {
      if (req.url === '/auth/.well-known/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]')
    }
    const get = (bearer?: string) =>
      fetch(`${h.url}/rest/v1/todos`, {
        headers: { apikey: PUBLISHABLE, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      })
    const ada = await token('ada')
    assert.equal((await get(ada)).status, 200)
    assert.equal((await get(ada)).status, 200)
    const refused = await get(ada)
    assert.equal(refused.status, 429)
    assert.ok(Number(refused.headers.get('retry-after')) > 0)
    assert.deepEqual(await refused.json(), {
      code: 'over_request_rate_limit',
      message: 'Too many requests for this user; try again later',
    })
    assert.equal((await get(await token('grace'))).status, 200, 'another user has a bucket of their own')
    // A token claiming ada's sub but not signed by Supabase Auth does not spend (or reach) her bucket.
    assert.equal((await get(await token('ada', stranger.privateKey))).status, 200)
    for (let i = 0; i < 3; i++) assert.equal((await get()).status, 200, 'no token: per client only')
  } finally {
    await h.close()
  }
})

test('per-user routes are checked like the per-client ones', async () => {
  const { resolveServicesConfig } = await import('../../src/services/config.ts')
  const config = (routes: string) => resolveServicesConfig({ urls: { rest: 'http://x' }, userRateLimitRoutes: routes })
  assert.equal(config('GET /rest/v1/*=5/1s').userLimits.get('GET /rest/v1/*')?.limit, 5)
  assert.throws(() => config('POST /signup=5/1s'), /no such service route/)
  assert.throws(() => config('GET /rest/v1/*=5/1s,POST /rest/v1/*=6/1s'), /share one bucket/)
  // The socket's user is in its frames, not its handshake: a per-user limit there could count nothing.
  assert.throws(
    () => config('GET /realtime/v1/websocket=5/1m'),
    (err: unknown) =>
      err instanceof AuthgateConfigError &&
      /GET \/realtime\/v1\/websocket/.test(err.message) &&
      /per client/.test(err.message),
  )
})

test('per user with cookie sessions: a stand-in counts for the real user behind it, and no second header moves the count', async () => {
  const { randomBytes } = await import('node:crypto')
  const { generateKeyPair, exportJWK, SignJWT } = await import('jose')
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }
  const token = (sub: string) =>
    new SignJWT({ role: 'authenticated' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setSubject(sub)
      .setExpirationTime('1h')
      .sign(privateKey)
  const ada = await token('ada')
  const grace = await token('grace')
  const h = await withServices(
    { userRateLimitRoutes: 'GET /rest/v1/*=2/1m' },
    {},
    { rateLimit: limited(''), sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }] } },
  )
  try {
    h.upstream.handler = (req, res) => {
      if (req.url === '/auth/.well-known/jwks.json')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }))
      if (req.url?.startsWith('/auth/token'))
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ access_token: ada, refresh_token: 'r', expires_in: 3600, user: { id: 'ada' } }))
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]')
    }
    const signIn = await fetch(`${h.url}/auth/token?grant_type=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"email":"ada@example.com","password":"secret123"}',
    })
    const cookie = signIn.headers
      .getSetCookie()
      .find((c) => c.includes('authgate-session='))!
      .split(';')[0]!
    const standIn = ((await signIn.json()) as { access_token: string }).access_token
    assert.notEqual(standIn, ada)
    const get = (headers: Record<string, string>) =>
      fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE, ...headers } })
    const asAda = { authorization: `Bearer ${standIn}`, cookie }
    const first = await get(asAda)
    assert.equal(first.status, 200, await first.clone().text())
    assert.equal((await get(asAda)).status, 200)
    const refused = await get(asAda)
    assert.equal(refused.status, 429, 'the stand-in spends the real user’s bucket')
    assert.equal(((await refused.json()) as { code: string }).code, 'over_request_rate_limit')
    // The same user with the real token shares the bucket: the limit is the user's, not the token's.
    assert.equal((await get({ authorization: `Bearer ${ada}` })).status, 429)
    // Another user's real token beside the stand-in, as the key, does not make the request grace's:
    // ada's spent bucket answers, nothing is forwarded. In a second Authorization it is refused
    // before any limit reads one of the two (Realtime and Deno would read both).
    const sent = h.upstream.requests.length
    assert.equal((await get({ ...asAda, apikey: grace })).status, 429)
    for (const pair of [
      [standIn, grace],
      [grace, standIn],
    ])
      assert.equal(
        await rawGet(h.url, [
          ['apikey', PUBLISHABLE],
          ['cookie', cookie],
          ['authorization', `Bearer ${pair[0]!}`],
          ['authorization', `Bearer ${pair[1]!}`],
        ]),
        400,
      )
    assert.equal(h.upstream.requests.length, sent, 'nothing forwarded')
    // Text after a stand-in: not a stand-in as a bearer is read for the swap (Supabase Auth's
    // reading), so it goes on as sent, to a service that refuses it (none holds the stand-ins' key),
    // never as ada's real token, which her spent bucket would have refused.
    const before = h.upstream.requests.length
    await get({ ...asAda, authorization: `Bearer ${standIn} x` })
    assert.equal(h.upstream.requests.length, before + 1)
    assert.deepEqual(values(h.upstream.requests.at(-1)!, 'authorization'), [`Bearer ${standIn} x`])
    // A stand-in without its cookie spends nobody's bucket: it is refused, as without a limit.
    const bare = await get({ authorization: `Bearer ${standIn}` })
    assert.equal(bare.status, 401)
    assert.equal(((await bare.json()) as { code: string }).code, 'session_not_found')
    assert.equal((await get({ authorization: `Bearer ${grace}` })).status, 200, 'grace has her own bucket')
  } finally {
    await h.close()
  }
})

test('per user: the token is read as the services read it, the first piece after the scheme, whatever follows it', async () => {
  const { generateKeyPair, exportJWK, SignJWT } = await import('jose')
  const { publicKey, privateKey } = await generateKeyPair('ES256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }
  const ada = await new SignJWT({ role: 'authenticated' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setSubject('ada')
    .setExpirationTime('1h')
    .sign(privateKey)
  const h = await withServices({ userRateLimitRoutes: 'GET /rest/v1/*=5/1m' }, {}, { rateLimit: limited('') })
  try {
    h.upstream.handler = (req, res) => {
      if (req.url === '/auth/.well-known/jwks.json')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }))
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]')
    }
    const get = (authorization: string) =>
      fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE, authorization } })
    for (let i = 0; i < 5; i++) assert.equal((await get(`Bearer ${ada}`)).status, 200)
    assert.equal((await get(`Bearer ${ada}`)).status, 429)
    const sent = h.upstream.requests.length
    // PostgREST reads the second space-separated piece (`"Bearer" : t : _`), Realtime's API the
    // piece after the scheme: text after the token does not make the request nobody's.
    for (const authorization of [
      `Bearer ${ada} x`,
      `Bearer ${ada} ${ada}`,
      `Bearer\t${ada}`,
      `Bearer  ${ada}`,
      `bearer ${ada}`,
      `BEARER ${ada} trailing text`,
    ])
      assert.equal((await get(authorization)).status, 429, JSON.stringify(authorization.replace(ada, '<jwt>')))
    assert.equal(h.upstream.requests.length, sent, 'nothing forwarded')
  } finally {
    await h.close()
  }
})
