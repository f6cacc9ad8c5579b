import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { withFakeBackend, type Harness } from '../support/app.ts'

const JSON_CT = { 'content-type': 'application/json' }
const UUID = '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71'

// [method, url, body, what it breaks]
const INVALID: Array<[string, string, string, string]> = [
  ['POST', '/auth/signup', '{"email":"a@example.com"}', 'missing password'],
  ['POST', '/auth/signup', '{"email":"not-an-email","password":"secret123"}', 'malformed e-mail'],
  ['POST', '/auth/signup', '{"password":"secret123","code_challenge":"short"}', 'code_challenge under 43 characters'],
  [
    'POST',
    '/auth/signup',
    `{"password":"secret123","code_challenge":"${'a'.repeat(129)}"}`,
    'code_challenge over 128 characters',
  ],
  [
    'POST',
    '/auth/signup',
    `{"password":"secret123","code_challenge":"${'a'.repeat(42)}!"}`,
    'code_challenge with a character outside RFC 7636',
  ],
  ['POST', '/auth/signup', '{"password":"secret123","code_challenge_method":"md5"}', 'unknown PKCE method'],
  // Read by the CAPTCHA check alone, not decoded with the route's struct: the validator's refusal.
  [
    'POST',
    '/auth/signup',
    '{"password":"secret123","gotrue_meta_security":"token"}',
    'gotrue_meta_security not an object',
  ],
  ['POST', '/auth/otp', '{"email":"bad@"}', 'malformed e-mail on /otp'],
  ['POST', '/auth/verify', '{"token":"123456","email":"a@example.com"}', 'verify without type'],
  ['POST', '/auth/verify', '{"type":"password","token":"1"}', 'verify with an unknown type'],
  ['POST', '/auth/recover', '{}', 'recover without email'],
  ['POST', '/auth/resend', '{"type":"magiclink","email":"a@example.com"}', 'resend with an unsupported type'],
  ['POST', '/auth/oauth/clients/register', '{"redirect_uris":[]}', 'no redirect URIs'],
  [
    'POST',
    '/auth/oauth/clients/register',
    `{"redirect_uris":[${Array(11).fill('"http://localhost/cb"').join(',')}]}`,
    'more than 10 redirect URIs',
  ],
  [
    'POST',
    '/auth/oauth/clients/register',
    '{"redirect_uris":["http://localhost/cb"],"client_uri":"not a uri"}',
    'client_uri not a URI',
  ],
  [
    'POST',
    '/auth/oauth/clients/register',
    '{"redirect_uris":["http://localhost/cb"],"token_endpoint_auth_method":"private_key_jwt"}',
    'unsupported auth method',
  ],
  ['POST', '/auth/passkeys/registration/verify', '{"challenge_id":"nope","credential":{}}', 'challenge_id not a UUID'],
  ['POST', '/auth/passkeys/authentication/verify', `{"challenge_id":"${UUID}"}`, 'no credential'],
  ['PATCH', '/auth/passkeys/abc', '{"friendly_name":""}', 'empty friendly_name'],
  ['PATCH', '/auth/passkeys/abc', `{"friendly_name":"${'x'.repeat(121)}"}`, 'friendly_name over 120 characters'],
]

// A field of another JSON type than the route's: Supabase Auth's decoder fails on it before any
// other check, so it is 400 bad_json there and here, whatever else the body holds.
const TYPE_MISMATCHES: Array<[string, string, string, string]> = [
  ['POST', '/auth/signup', '{"email":"a@example.com","password":123456}', 'password not a string'],
  ['POST', '/auth/signup', '{"password":"secret123","data":"x"}', 'data not an object'],
  ['POST', '/auth/token?grant_type=id_token', '{"id_token":"x","link_identity":"true"}', 'link_identity as a string'],
  ['POST', '/auth/otp', '{"email":"a@example.com","create_user":"false"}', 'create_user as a string (no coercion)'],
  ['PUT', '/auth/user', '{"data":[1,2]}', 'update user with data as an array'],
  ['PUT', '/auth/user', '{"password":5}', 'update user with a numeric password'],
  ['POST', '/auth/otp', '{"create_user":"x"}', 'create_user as a string, and no address either'],
  ['POST', '/auth/verify', '{"type":"email","token":123456,"email":"a@example.com"}', 'a numeric token'],
  ['POST', '/auth/factors', '{"factor_type":1}', 'a numeric factor_type'],
]

describe('a field of another JSON type: 400 bad_json, as Supabase Auth decodes it, and nothing forwarded', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  for (const [method, url, body, what] of TYPE_MISMATCHES) {
    test(`${method} ${url}: ${what}`, async () => {
      h.backend.requests.length = 0
      const res = await h.app.inject({
        method: method as 'POST',
        url,
        payload: body,
        headers: { ...JSON_CT, authorization: 'Bearer a.b.c' },
      })
      assert.equal(res.statusCode, 400, res.body)
      assert.equal(res.json().error_code, 'bad_json', res.body)
      assert.match(res.json().msg, /^Could not parse request body as JSON: cannot read an? \w+ as body\//)
      assert.equal(h.backend.requests.length, 0)
    })
  }
})

describe('/token: a field of another JSON type counts only in the grant that reads it', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  for (const [query, body, code] of [
    ['grant_type=password', '{"email":1,"password":"x"}', 'bad_json'],
    // The password grant's struct has no refresh_token: the validator's refusal, not the decoder's.
    ['grant_type=password', '{"email":"a@example.com","password":"x","refresh_token":1}', 'validation_failed'],
    ['grant_type=refresh_token', '{"refresh_token":1}', 'bad_json'],
    // A grant the table does not name (nor an inherited property of it) decodes nothing.
    ['grant_type=constructor', '{"email":1}', 'validation_failed'],
    ['grant_type=__proto__', '{"email":1}', 'validation_failed'],
    ['', '{"email":1}', 'validation_failed'],
  ] as const) {
    test(`?${query} ${body} → 400 ${code}`, async () => {
      h.backend.requests.length = 0
      const res = await h.app.inject({ method: 'POST', url: `/auth/token?${query}`, payload: body, headers: JSON_CT })
      assert.equal(res.statusCode, 400, res.body)
      assert.equal(res.json().error_code, code, res.body)
      assert.equal(h.backend.requests.length, 0)
    })
  }
})

describe('validation failures get 400 validation_failed and reach nothing', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  for (const [method, url, body, what] of INVALID) {
    test(`${method} ${url}: ${what}`, async () => {
      h.backend.requests.length = 0
      const res = await h.app.inject({ method: method as 'POST', url, payload: body, headers: JSON_CT })
      assert.equal(res.statusCode, 400, res.body)
      const json = res.json()
      assert.equal(json.error_code, 'validation_failed')
      assert.equal(json.code, 400)
      assert.equal(typeof json.msg, 'string')
      assert.equal(res.headers['x-sb-error-code'], 'validation_failed')
      assert.equal(h.backend.requests.length, 0)
    })
  }

  test('the 2024-01-01 shape is negotiated by X-Supabase-Api-Version', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/signup',
      payload: '{"email":"a@example.com"}',
      headers: { ...JSON_CT, 'x-supabase-api-version': '2024-01-01' },
    })
    assert.equal(res.statusCode, 400)
    assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message'])
    assert.equal(res.json().code, 'validation_failed')
    assert.match(res.json().message, /password/)
    assert.equal(res.headers['x-supabase-api-version'], '2024-01-01')
  })

  test('an older or invalid API version keeps the legacy shape', async () => {
    for (const v of ['2023-12-31', 'yesterday', '']) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/auth/signup',
        payload: '{"email":"a@example.com"}',
        headers: { ...JSON_CT, 'x-supabase-api-version': v },
      })
      assert.equal(res.json().error_code, 'validation_failed', v)
      assert.equal(res.headers['x-supabase-api-version'], undefined)
    }
  })

  test('a valid body with an explicit false and unknown keys passes', async () => {
    h.backend.requests.length = 0
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/otp',
      payload: '{"email":"a@example.com","create_user":false,"x":1}',
      headers: JSON_CT,
    })
    assert.equal(res.statusCode, 200)
    assert.equal(h.backend.requests.length, 1)
  })
})

describe('content types and malformed bodies', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend({ bodyLimit: 64 * 1024 })
  })
  after(() => h.close())

  const cases: Array<[string, Record<string, string>, string | Buffer, number, string]> = [
    ['text/plain', { 'content-type': 'text/plain' }, '{"email":"a@example.com"}', 415, 'unsupported_media_type'],
    [
      'form on a JSON route',
      { 'content-type': 'application/x-www-form-urlencoded' },
      'email=a%40example.com',
      415,
      'unsupported_media_type',
    ],
    ['no content type', {}, '{"email":"a@example.com"}', 415, 'unsupported_media_type'],
    ['malformed JSON', { 'content-type': 'application/json' }, '{"email":', 400, 'bad_json'],
    ['empty body', { 'content-type': 'application/json' }, '', 400, 'bad_json'],
    [
      'prototype poisoning',
      { 'content-type': 'application/json' },
      '{"email":"a@example.com","__proto__":{"admin":true}}',
      400,
      'bad_json',
    ],
    [
      'prototype poisoning, a letter escaped',
      { 'content-type': 'application/json' },
      '{"email":"a@example.com","\\u005f_proto__":{"admin":true}}',
      400,
      'bad_json',
    ],
    [
      'a byte order mark before the JSON (Go reads none)',
      { 'content-type': 'application/json' },
      '\ufeff{"email":"a@example.com"}',
      400,
      'bad_json',
    ],
    [
      'a constructor key',
      { 'content-type': 'application/json' },
      '{"email":"a@example.com","constructor":{"prototype":{"admin":true}}}',
      400,
      'bad_json',
    ],
    [
      'a constructor key, a letter escaped',
      { 'content-type': 'application/json' },
      '{"email":"a@example.com","\\u0063onstructor":{"prototype":{"admin":true}}}',
      400,
      'bad_json',
    ],
    [
      'invalid UTF-8',
      { 'content-type': 'application/json' },
      Buffer.from([0x7b, 0x22, 0x65, 0x6d, 0x61, 0x69, 0x6c, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      400,
      'bad_json',
    ],
    [
      'garbage bytes',
      { 'content-type': 'application/json' },
      Buffer.from([0, 1, 2, 0xc3, 0x28, 0x80, 0xff]),
      400,
      'bad_json',
    ],
    ...['[]', '1', '"x"', 'true'].map((body): [string, Record<string, string>, string, number, string] => [
      `the JSON value ${body}, not an object (Go's decoder refuses it)`,
      { 'content-type': 'application/json' },
      body,
      400,
      'bad_json',
    ]),
    [
      'body over the limit',
      { 'content-type': 'application/json' },
      '{"email":"' + 'a'.repeat(70 * 1024) + '"}',
      413,
      'request_entity_too_large',
    ],
    [
      'deep nesting',
      { 'content-type': 'application/json' },
      '{"email":"a@example.com","data":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}',
      413,
      'request_entity_too_large',
    ],
    [
      'moderately deep nesting under the size limit',
      { 'content-type': 'application/json' },
      '{"data":' + '['.repeat(20_000) + ']'.repeat(20_000) + ',"email":"a@example.com"}',
      400,
      'bad_json',
    ],
  ]
  for (const [what, headers, payload, status, code] of cases) {
    test(`${what} → ${status} ${code}`, async () => {
      h.backend.requests.length = 0
      const res = await h.app.inject({ method: 'POST', url: '/auth/recover', payload, headers })
      assert.equal(res.statusCode, status, res.body)
      assert.equal(res.json().error_code, code)
      assert.equal(h.backend.requests.length, 0)
    })
  }

  test('a JSON null is read as no field at all, as Go reads it into a struct, and forwarded as sent', async () => {
    for (const payload of ['null', ' null\n']) {
      h.backend.requests.length = 0
      const headers = { ...JSON_CT, authorization: 'Bearer a.b.c' }
      const res = await h.app.inject({ method: 'PUT', url: '/auth/user', payload, headers })
      const same = await h.app.inject({ method: 'PUT', url: '/auth/user', payload: '{}', headers })
      assert.equal(res.statusCode, same.statusCode, res.body)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(h.backend.requests[0]?.body.toString(), payload)
    }
    // Where the route requires a field, its absence is what is refused, as with `{}`.
    const res = await h.app.inject({ method: 'POST', url: '/auth/recover', payload: 'null', headers: JSON_CT })
    assert.equal(res.statusCode, 400)
    assert.equal(res.json().error_code, 'validation_failed')
  })

  test('a bad_json message never repeats part of the body (a password could be in it)', async () => {
    const secret = 'Qz7xK9wP2vJ'
    const bodies = [
      secret,
      `{"email":"a@example.com","password":${secret}}`,
      `{"email":"a@example.com","password":"${secret}",}`,
      `["${secret}",]`,
      `{"password":"${secret}"}x`,
      `{"password":"${secret}\u0001"}`.replace('\\u0001', '\u0001'),
      `{"password":"${secret}`,
    ]
    for (const payload of bodies) {
      for (const version of [undefined, '2024-01-01']) {
        const res = await h.app.inject({
          method: 'POST',
          url: '/auth/token?grant_type=password',
          payload,
          headers: { 'content-type': 'application/json', ...(version ? { 'x-supabase-api-version': version } : {}) },
        })
        assert.equal(res.statusCode, 400, payload)
        assert.equal(res.headers['x-sb-error-code'], 'bad_json')
        const message = String(res.json().msg ?? res.json().message)
        assert.match(message, /^Could not parse request body as JSON: /)
        for (let i = 0; i + 3 <= secret.length; i++)
          assert.ok(!message.includes(secret.slice(i, i + 3)), `${JSON.stringify(message)} echoes the body`)
      }
    }
    // Where the parser names a position, the message keeps it: that helps and reveals nothing.
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/recover',
      payload: '{"email":"a@example.com" "x"}',
      headers: { 'content-type': 'application/json' },
    })
    assert.match(res.json().msg, /at position 25 /)
  })

  test('a body with a huge number of properties (60,000, under the 1 MiB default) is validated and forwarded intact', async () => {
    const h2 = await withFakeBackend()
    try {
      const props = Array.from({ length: 60_000 }, (_, i) => `"k${i}":${i}`).join(',')
      const body = `{${props},"email":"a@example.com"}`
      const res = await h2.app.inject({
        method: 'POST',
        url: '/auth/recover',
        payload: body,
        headers: { 'content-type': 'application/json' },
      })
      assert.equal(res.statusCode, 200)
      assert.equal(h2.backend.requests.length, 1)
      assert.equal(h2.backend.requests[0]!.body.toString(), body)
    } finally {
      await h2.close()
    }
  })

  test('unknown routes get 404 in the error shape and are not forwarded', async () => {
    h.backend.requests.length = 0
    for (const url of ['/auth/admin/users', '/auth/invite', '/auth/nope', '/auth/user/', '/auth']) {
      const res = await h.app.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 404, url)
      assert.equal(res.json().error_code, 'not_found', url)
    }
    // Outside the prefix the application's own not-found answer stands (Fastify's by default).
    const outside = await h.app.inject({ method: 'GET', url: '/nothing' })
    assert.equal(outside.statusCode, 404)
    assert.equal(outside.json().error, 'Not Found')
    // A mounted path asked with a method it does not serve (HEAD is not GET, as on Supabase Auth): 405.
    const head = await h.app.inject({ method: 'HEAD', url: '/auth/health' })
    assert.equal(head.statusCode, 405)
    assert.equal(head.headers.allow, 'GET')
    const factors = await h.app.inject({ method: 'GET', url: '/auth/factors' })
    assert.equal(factors.statusCode, 405)
    assert.equal(factors.headers.allow, 'POST')
    assert.equal(factors.json().error_code, 'method_not_allowed')
    assert.equal(h.backend.requests.length, 0)
  })

  test('the default body limit is 1 MiB', async () => {
    const h2 = await withFakeBackend()
    try {
      const under = '{"email":"a@example.com","pad":"' + 'a'.repeat(1024 * 1024 - 60) + '"}'
      const over = '{"email":"a@example.com","pad":"' + 'a'.repeat(1024 * 1024) + '"}'
      assert.equal(
        (
          await h2.app.inject({
            method: 'POST',
            url: '/auth/recover',
            payload: under,
            headers: { 'content-type': 'application/json' },
          })
        ).statusCode,
        200,
      )
      const res = await h2.app.inject({
        method: 'POST',
        url: '/auth/recover',
        payload: over,
        headers: { 'content-type': 'application/json' },
      })
      assert.equal(res.statusCode, 413)
    } finally {
      await h2.close()
    }
  })
})
