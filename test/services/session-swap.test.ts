import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { StandIns } from '../../src/sessions/stand-ins.ts'
import { PUBLISHABLE, ANON, withServices, type ServicesHarness } from './support.ts'

// In a suite, so that a run whose name pattern matches none of these tests starts no harness.
describe('a cookie session on the services', () => {
  let h: ServicesHarness
  let cookie = ''
  let standIn = ''

  before(async () => {
    h = await withServices({}, {}, { sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }] } })
    h.upstream.handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      if (req.url?.startsWith('/auth/token'))
        return void res.end(
          '{"access_token":"real-access","refresh_token":"real-refresh","expires_in":3600,"user":{"id":"u"}}',
        )
      res.end('{"ok":true}')
    }
    const signIn = await fetch(`${h.url}/auth/token?grant_type=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"email":"a@example.com","password":"secret123"}',
    })
    cookie = signIn.headers.get('set-cookie')!.split(';')[0]!
    standIn = ((await signIn.json()) as { access_token: string }).access_token
  })
  after(() => h.close())

  const call = (path: string, headers: Record<string, string>, method = 'GET') =>
    fetch(`${h.url}${path}`, { method, headers: { apikey: PUBLISHABLE, ...headers } })

  test('a stand-in with its cookie reaches every service as the real access token; the cookie never does', async () => {
    for (const path of ['/rest/v1/todos', '/storage/v1/object/docs/a.txt', '/functions/v1/hello']) {
      const res = await call(path, { authorization: `Bearer ${standIn}`, cookie })
      assert.equal(res.status, 200, path)
      await res.body?.cancel()
      const seen = h.upstream.requests.at(-1)!
      assert.equal(seen.headers.authorization, 'Bearer real-access', path)
      assert.equal(seen.headers.cookie, undefined, path)
    }
    // A write from the page's own origin, too.
    const post = await call('/rest/v1/todos', { authorization: `Bearer ${standIn}`, cookie, origin: h.url }, 'POST')
    assert.equal(post.status, 200)
    assert.equal(h.upstream.requests.at(-1)!.headers.authorization, 'Bearer real-access')
  })

  test('without a stand-in the cookie is not used: the key goes on as the anon JWT', async () => {
    const res = await call('/rest/v1/todos', { cookie })
    assert.equal(res.status, 200)
    assert.equal(h.upstream.requests.at(-1)!.headers.authorization, `Bearer ${ANON}`)
  })

  test('a stand-in without its cookie, with a foreign origin or forged is refused in the services’ shape, nothing sent on', async () => {
    const before = h.upstream.requests.length
    const bare = await call('/rest/v1/todos', { authorization: `Bearer ${standIn}` })
    assert.equal(bare.status, 401)
    assert.equal(((await bare.json()) as { code: string }).code, 'session_not_found')
    const foreign = await call('/rest/v1/todos', {
      authorization: `Bearer ${standIn}`,
      cookie,
      origin: 'https://evil.example',
    })
    assert.equal(foreign.status, 403)
    assert.equal(((await foreign.json()) as { code: string }).code, 'cross_site_request')
    const [head, , mac] = standIn.split('.')
    const forged = `${head}.${Buffer.from('{"exp":9999999999,"role":"service_role"}').toString('base64url')}.${mac}`
    const changed = await call('/storage/v1/object/docs/a.txt', { authorization: `Bearer ${forged}`, cookie })
    assert.equal(changed.status, 401)
    assert.equal(((await changed.json()) as { code: string }).code, 'bad_jwt')
    assert.equal(h.upstream.requests.length, before)
  })

  test('a stand-in made under a key no longer configured is 401 bad_jwt on every service, nothing sent on', async () => {
    const id = cookie.split('=')[1]!
    const active = (await h.app.authgate.sessions!.sessions.load(id))!
    const stale = new StandIns([{ id: 'ka', key: randomBytes(32) }]).access(
      active.handle,
      active.session.accessToken,
      active.session.expiresAt,
    )
    const before = h.upstream.requests.length
    for (const path of ['/rest/v1/todos', '/storage/v1/object/docs/a.txt', '/functions/v1/hello', '/graphql/v1']) {
      const bare: Record<string, string> = { authorization: `Bearer ${stale}` }
      for (const headers of [{ ...bare, cookie }, bare]) {
        const res = await call(path, headers)
        assert.equal(res.status, 401, path)
        const body = (await res.json()) as { code: string; message: string }
        assert.equal(body.code, 'bad_jwt', path)
        assert.match(body.message, /key authgate no longer holds/)
      }
    }
    assert.equal(h.upstream.requests.length, before, 'nothing reached a service')
  })
})
