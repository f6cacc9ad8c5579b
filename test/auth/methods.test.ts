import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AUTH_ROUTES } from '../../src/auth/routes/index.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'

/** Every method Fastify routes: a mounted path answers each it does not serve with 405. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'QUERY'] as const
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE'])
const PREFIX = '/auth'

/**
 * Every mounted path (parameters given a value no static path has), its root aliases, and the static
 * paths a template would also match, each with the methods mounted there: any other method is 405.
 */
function mountedPaths(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  const add = (path: string, method: string) => out.set(path, (out.get(path) ?? new Set()).add(method))
  for (const r of AUTH_ROUTES) {
    add(PREFIX + r.path.replace(/\{[^}]+\}/g, 'x1y2'), r.method)
    if (r.rootAlias) add(`/.well-known/${r.path.slice('/.well-known/'.length)}${PREFIX}`, r.method)
  }
  return out
}

describe('wrong methods on mounted paths: 405 with Allow, generated from the route table', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(async () => {
    await h.close()
  })

  let count = 0
  for (const [path, mounted] of mountedPaths()) {
    for (const method of METHODS.filter((m) => !mounted.has(m))) {
      count++
      it(`${method} ${path} → 405, Allow: ${[...mounted].join(', ')}`, async () => {
        const before = h.backend.requests.length
        const res = await h.app.inject({
          method: method as 'GET',
          url: path,
          headers: { 'content-type': 'application/json' },
          ...(BODYLESS.has(method) ? {} : { payload: '{}' }),
        })
        assert.equal(res.statusCode, 405, res.body)
        assert.deepEqual(new Set(String(res.headers.allow).split(', ')), mounted)
        assert.equal(res.headers['x-sb-error-code'], 'method_not_allowed')
        if (method !== 'HEAD') assert.equal(res.json().error_code, 'method_not_allowed')
        assert.equal(h.backend.requests.length, before, 'nothing forwarded')
      })
    }
  }

  it('covers the wrong-method requests a contract tester found answered otherwise', () => {
    const paths = mountedPaths()
    for (const [method, path] of [
      ['POST', '/.well-known/oauth-authorization-server/auth'],
      ['DELETE', '/.well-known/openid-configuration/auth'],
      ['PATCH', '/auth/passkeys/registration/options'],
      ['DELETE', '/auth/passkeys/authentication/verify'],
      ['DELETE', '/auth/factors/x1y2/challenge'],
      ['DELETE', '/auth/factors/x1y2/verify'],
      ['GET', '/auth/oauth/authorizations/x1y2/consent'],
      ['DELETE', '/auth/user/identities/authorize'],
    ])
      assert.ok(paths.has(path!) && !paths.get(path!)!.has(method!), `${method} ${path}`)
    assert.ok(count > 0)
  })

  it('the methods that are mounted are still served', async () => {
    for (const [method, url] of [
      ['GET', '/.well-known/oauth-authorization-server/auth'],
      ['GET', '/auth/user/identities/authorize?provider=github'],
      ['DELETE', '/auth/user/identities/8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71'],
      ['PATCH', '/auth/passkeys/abc'],
    ] as const) {
      const res = await h.app.inject({
        method,
        url,
        ...(method === 'PATCH'
          ? { headers: { 'content-type': 'application/json' }, payload: '{"friendly_name":"a"}' }
          : {}),
      })
      assert.equal(res.statusCode, 200, `${method} ${url}: ${res.body}`)
    }
  })

  it('a malformed parameter is still 400, not 405', async () => {
    const res = await h.app.inject({
      method: 'PATCH',
      url: '/auth/passkeys/a/b',
      headers: { 'content-type': 'application/json' },
      payload: '{"friendly_name":"a"}',
    })
    assert.equal(res.statusCode, 400)
  })
})
