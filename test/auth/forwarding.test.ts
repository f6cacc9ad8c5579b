import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { AUTH_ROUTES, routeName } from '../../src/auth/routes/index.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { VALID_BODIES, withFakeBackend, type Harness } from '../support/app.ts'

const JSON_CT = { 'content-type': 'application/json' }

describe('typed routes reach the backend', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  for (const route of AUTH_ROUTES.filter((r) => r.kind === 'typed')) {
    test(`${routeName(route)} → backend ${route.backend?.method ?? route.method} ${route.path}`, async () => {
      h.backend.requests.length = 0
      const body = VALID_BODIES[routeName(route)]
      const path = route.path.replace(/\{\w+\}/g, 'pk-1')
      const url = '/auth' + path
      const res = await h.app.inject({
        method: route.method,
        url,
        ...(body ? { payload: body, headers: JSON_CT } : {}),
      })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.body, '{"ok":true}')
      assert.equal(h.backend.requests.length, 1)
      const got = h.backend.requests[0]!
      assert.equal(got.method, route.backend?.method ?? route.method)
      assert.equal(got.target, path)
      if (body && got.method !== 'GET') assert.equal(got.body.toString(), body)
    })
  }
})

describe('bytes arrive unchanged', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  test('unknown properties, explicit false, odd whitespace and key order are byte-identical', async () => {
    const body = Buffer.from(
      '{ "zeta" : 1,\n\t"create_user":false ,"email":"A@Example.com",  "extra":{"nested":[1, 2 ,null]} , "data":{}}  ',
    )
    const res = await h.app.inject({ method: 'POST', url: '/auth/otp', payload: body, headers: JSON_CT })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(h.backend.requests.at(-1)!.body, body)
    assert.equal(h.backend.requests.at(-1)!.headers['content-length'], String(body.length))
  })

  test('signup with unknown properties and nulls for PKCE (as supabase-js sends) is forwarded', async () => {
    const body =
      '{"email":"a@example.com","password":"secret123","data":{},"gotrue_meta_security":{},"code_challenge":null,"code_challenge_method":null,"surprise":true}'
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/signup',
      payload: body,
      headers: { 'content-type': 'application/json;charset=UTF-8' },
    })
    assert.equal(res.statusCode, 200)
    assert.equal(h.backend.requests.at(-1)!.body.toString(), body)
  })

  for (const [url, expected] of [
    ['/auth/token?grant_type=password', '/token?grant_type=password'],
    [
      '/auth/token?grant_type=refresh_token&x=%2F%2f+a%20b&x=2&empty=&flag',
      '/token?grant_type=refresh_token&x=%2F%2f+a%20b&x=2&empty=&flag',
    ],
    [
      '/auth/signup?redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fwelcome%3Fa%3D1',
      '/signup?redirect_to=http%3A%2F%2Flocalhost%3A3000%2Fwelcome%3Fa%3D1',
    ],
    [
      '/auth/recover?redirect_to=http://localhost:3000/reset?x=1&y=%E2%9C%93',
      '/recover?redirect_to=http://localhost:3000/reset?x=1&y=%E2%9C%93',
    ],
    ['/auth/logout?scope=others', '/logout?scope=others'],
  ] as const) {
    test(`query string ${url} arrives byte-identical`, async () => {
      const method = url.includes('/settings') ? 'GET' : 'POST'
      const route = url.slice(5).split('?')[0]!
      const payload = VALID_BODIES[`POST ${route}`]
      const res = await h.app.inject({
        method,
        url,
        ...(method === 'POST' && payload ? { payload, headers: JSON_CT } : {}),
      })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(h.backend.requests.at(-1)!.target, expected)
    })
  }

  test('Authorization arrives unchanged on GET and PUT /user', async () => {
    const exact = 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig'
    await h.app.inject({ method: 'GET', url: '/auth/user', headers: { authorization: exact } })
    assert.equal(h.backend.requests.at(-1)!.headers.authorization, exact)
    await h.app.inject({
      method: 'PUT',
      url: '/auth/user',
      headers: { authorization: 'bearer lower-case-scheme', ...JSON_CT },
      payload: '{"data":{"a":null}}',
    })
    assert.equal(h.backend.requests.at(-1)!.headers.authorization, 'bearer lower-case-scheme')
    assert.equal(h.backend.requests.at(-1)!.body.toString(), '{"data":{"a":null}}')
  })

  test('POST /reauthenticate reaches the backend as GET /reauthenticate without a body', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/reauthenticate',
      payload: '{}',
      headers: { ...JSON_CT, authorization: 'Bearer t' },
    })
    assert.equal(res.statusCode, 200)
    const got = h.backend.requests.at(-1)!
    assert.equal(got.method, 'GET')
    assert.equal(got.target, '/reauthenticate')
    assert.equal(got.body.length, 0)
    assert.equal(got.headers['content-length'], undefined)
    assert.equal(got.headers.authorization, 'Bearer t')
  })

  test('POST /logout with a JSON content type and no body (as supabase-js sends) is forwarded', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/logout?scope=local',
      headers: { 'content-type': 'application/json;charset=UTF-8', authorization: 'Bearer t' },
    })
    assert.equal(res.statusCode, 200)
    assert.equal(h.backend.requests.at(-1)!.target, '/logout?scope=local')
  })

  test('POST /oauth/token takes a form body and HTTP Basic client auth, forwarded as sent', async () => {
    const form =
      'grant_type=authorization_code&code=abc&redirect_uri=http%3A%2F%2Flocalhost%3A3000%2Fcb&code_verifier=xyz'
    const basic = 'Basic ' + Buffer.from('client-id:s3cr%t').toString('base64')
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/oauth/token',
      payload: form,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
    })
    assert.equal(res.statusCode, 200)
    const got = h.backend.requests.at(-1)!
    assert.equal(got.body.toString(), form)
    assert.equal(got.headers.authorization, basic)
    assert.equal(got.headers['content-type'], 'application/x-www-form-urlencoded')
  })

  test('POST /oauth/token also takes JSON', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/oauth/token',
      payload: VALID_BODIES['POST /oauth/token']!,
      headers: JSON_CT,
    })
    assert.equal(res.statusCode, 200)
  })

  test('application/*+json is accepted on typed routes', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/recover',
      payload: '{"email":"a@example.com"}',
      headers: { 'content-type': 'application/vnd.api+json' },
    })
    assert.equal(res.statusCode, 200)
  })
})

describe('backend base URL with a path (hosted Supabase)', () => {
  test('the path is kept and the prefix is replaced', async () => {
    const h = await withFakeBackend({ prefix: '/api/auth' })
    try {
      const app2 = h.app
      // The harness points at the backend root; rebuild with a path.
      await app2.close()
      const { buildApp } = await import('../../src/app.ts')
      const app = await buildApp({
        config: { prefix: '/api/auth', backendUrl: parseBackendUrl('t', h.backend.url + '/auth/v1/') },
      })
      const res = await app.inject({ method: 'GET', url: '/api/auth/settings?x=1' })
      assert.equal(res.statusCode, 200)
      assert.equal(h.backend.requests.at(-1)!.target, '/auth/v1/settings?x=1')
      const old = await app.inject({ method: 'GET', url: '/auth/settings' })
      assert.equal(old.statusCode, 404)
      await app.close()
    } finally {
      await h.backend.close()
    }
  })
})
