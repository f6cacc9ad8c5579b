import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { FastifyRequest } from 'fastify'
import {
  advertiseIssParameter,
  backendIssuer,
  issOnAuthorizationRedirect,
  issOnConsentRedirect,
  oauthTokenError,
  rememberIssuer,
  withIssuer,
  type IssuerBackend,
} from '../../src/auth/oauth-conformance.ts'
import type { BackendResponse } from '../../src/core/backend.ts'
import type { AnswerMend } from '../../src/proxy/relay.ts'
import { withFakeBackend } from '../support/app.ts'

type HeldAnswer = Parameters<AnswerMend>[0]

const ISSUER = 'https://api.example.com/auth'
const JSON_TYPE = ['Content-Type', 'application/json']

const answer = (status: number, body: string, headers = JSON_TYPE): HeldAnswer => ({
  status,
  headers,
  body: Buffer.from(body),
})

/** A backend whose metadata answer is `metadata` (a status and body), counting the lookups. */
function fakeBackend(metadata: () => { status: number; body: string } | Error) {
  const calls: string[] = []
  const backend: IssuerBackend = {
    resolve: (path) => new URL(path, 'http://backend.test'),
    fetch: async (url) => {
      calls.push(String(url))
      const m = metadata()
      if (m instanceof Error) throw m
      return {
        status: m.status,
        headers: { get: () => null },
        text: async () => m.body,
        json: async () => JSON.parse(m.body) as unknown,
        arrayBuffer: async () => new ArrayBuffer(0),
        body: { cancel: async () => undefined },
      } satisfies BackendResponse
    },
  }
  return { backend, calls }
}

function fakeRequest(backend: IssuerBackend, authorization?: string) {
  const warnings: string[] = []
  const request = {
    server: { authgate: { backend } },
    headers: authorization === undefined ? {} : { authorization },
    log: { warn: (m: string) => warnings.push(m) },
  } as unknown as FastifyRequest
  return { request, warnings }
}

const metadataOk = () => ({ status: 200, body: JSON.stringify({ issuer: ISSUER }) })

describe('withIssuer', () => {
  test('adds iss to an authorization response, keeping the query as it came and the fragment', () => {
    assert.equal(
      withIssuer('http://localhost:3000/cb?code=a%2Bb&state=s', ISSUER),
      `http://localhost:3000/cb?code=a%2Bb&state=s&iss=${encodeURIComponent(ISSUER)}`,
    )
    assert.equal(
      withIssuer('https://c.example/cb?error=access_denied#x', 'i'),
      'https://c.example/cb?error=access_denied&iss=i#x',
    )
    assert.equal(withIssuer('https://c.example/cb?code=1&', 'i'), 'https://c.example/cb?code=1&iss=i')
  })
  test('leaves what is not one: no code or error, an iss already there, not a URL', () => {
    assert.equal(withIssuer('https://site.example/oauth/consent?authorization_id=abc', 'i'), undefined)
    assert.equal(withIssuer('https://c.example/cb?code=1&iss=other', 'i'), undefined)
    assert.equal(withIssuer('/relative?code=1', 'i'), undefined)
  })
  test('reads the location as Supabase Auth, which wrote it, reads a query', () => {
    // A pair holding `;` or a bad escape is no parameter to Go: no `code`, no `iss`.
    assert.equal(withIssuer('https://c.example/cb?code=1;', 'i'), undefined)
    assert.equal(withIssuer('https://c.example/cb?code=%zz', 'i'), undefined)
    assert.equal(withIssuer('https://c.example/cb?code=1&iss=x;', 'i'), 'https://c.example/cb?code=1&iss=x;&iss=i')
    // An encoded name is the same name; the fragment is not the query.
    assert.equal(withIssuer('https://c.example/cb?c%6Fde=1', 'i'), 'https://c.example/cb?c%6Fde=1&iss=i')
    assert.equal(withIssuer('https://c.example/cb#code=1', 'i'), undefined)
  })
})

describe('backendIssuer', () => {
  test('reads the metadata once, shares concurrent lookups, and uses a remembered issuer', async () => {
    const { backend, calls } = fakeBackend(metadataOk)
    const [a, b] = await Promise.all([backendIssuer(backend), backendIssuer(backend)])
    assert.equal(a, ISSUER)
    assert.equal(b, ISSUER)
    assert.deepEqual(calls, ['http://backend.test/.well-known/oauth-authorization-server'])
    assert.equal(await backendIssuer(backend), ISSUER)
    assert.equal(calls.length, 1)

    const other = fakeBackend(metadataOk)
    rememberIssuer(other.backend, 'https://remembered.example/auth')
    assert.equal(await backendIssuer(other.backend), 'https://remembered.example/auth')
    assert.equal(other.calls.length, 0)
  })

  test('undefined when the metadata cannot be had: an error status, no issuer, a failed request', async () => {
    for (const m of [
      () => ({ status: 404, body: '{}' }),
      () => ({ status: 200, body: '{"issuer":""}' }),
      () => new Error('ECONNREFUSED'),
    ]) {
      const { backend, calls } = fakeBackend(m)
      assert.equal(await backendIssuer(backend), undefined)
      // Not remembered as absent: the next lookup asks again.
      assert.equal(await backendIssuer(backend), undefined)
      assert.equal(calls.length, 2)
    }
  })
})

describe('advertiseIssParameter (RFC 9207 §3)', () => {
  test('appends the flag to the metadata and remembers its issuer', async () => {
    const { backend, calls } = fakeBackend(() => new Error('not asked'))
    const { request } = fakeRequest(backend)
    const body = `{"issuer":"${ISSUER}","response_types_supported":["code"]}\n`
    const out = advertiseIssParameter(answer(200, body), request) as HeldAnswer
    assert.equal(
      out.body.toString(),
      `{"issuer":"${ISSUER}","response_types_supported":["code"],"authorization_response_iss_parameter_supported":true}`,
    )
    assert.equal(await backendIssuer(backend), ISSUER)
    assert.equal(calls.length, 0)
  })
  test('leaves an error, a body without issuer, and one that already says it', () => {
    const { request } = fakeRequest(fakeBackend(metadataOk).backend)
    for (const a of [
      answer(404, '{"issuer":"x"}'),
      answer(200, '{"jwks_uri":"x"}'),
      answer(200, '{"issuer":"x","authorization_response_iss_parameter_supported":false}'),
    ])
      assert.equal(advertiseIssParameter(a, request), a)
  })
})

describe('issOnAuthorizationRedirect', () => {
  test('the redirect to the client with code or error gets iss; other headers stay in order', async () => {
    const { request } = fakeRequest(fakeBackend(metadataOk).backend)
    const a = answer(302, '', ['Location', 'http://localhost:3000/cb?error=invalid_scope&state=s', 'X-A', '1'])
    const out = await issOnAuthorizationRedirect(a, request)
    assert.deepEqual(out.headers, [
      'Location',
      `http://localhost:3000/cb?error=invalid_scope&state=s&iss=${encodeURIComponent(ISSUER)}`,
      'X-A',
      '1',
    ])
    assert.equal(out.status, 302)
  })
  test('the redirect to the consent page, a 400 and a 302 without Location are left', async () => {
    const { backend, calls } = fakeBackend(metadataOk)
    const { request } = fakeRequest(backend)
    for (const a of [
      answer(302, '', ['Location', 'https://site.example/oauth/consent?authorization_id=abc']),
      answer(400, '{"msg":"client_id is required"}'),
      answer(302, '', []),
    ])
      assert.equal(await issOnAuthorizationRedirect(a, request), a)
    assert.equal(calls.length, 0, 'the issuer is looked up only for an authorization response')
  })
  test('without an issuer the redirect goes as it came, and says why in the log', async () => {
    const { request, warnings } = fakeRequest(fakeBackend(() => new Error('down')).backend)
    const a = answer(302, '', ['Location', 'http://localhost:3000/cb?code=c'])
    assert.equal(await issOnAuthorizationRedirect(a, request), a)
    assert.equal(warnings.length, 1)
  })
})

describe('issOnConsentRedirect', () => {
  test('redirect_url with a code or an error gets iss', async () => {
    const { request } = fakeRequest(fakeBackend(metadataOk).backend)
    const out = await issOnConsentRedirect(
      answer(200, '{"redirect_url":"http://localhost:3000/cb?code=c&state=s"}'),
      request,
    )
    assert.deepEqual(JSON.parse(out.body.toString()), {
      redirect_url: `http://localhost:3000/cb?code=c&state=s&iss=${encodeURIComponent(ISSUER)}`,
    })
  })
  test('the consent details, an error and an undecodable body are left; no issuer leaves the answer', async () => {
    const { request } = fakeRequest(fakeBackend(metadataOk).backend)
    for (const a of [
      answer(200, '{"authorization_id":"a","client":{"id":"c"}}'),
      answer(404, '{"redirect_url":"http://localhost:3000/cb?code=c"}'),
      answer(200, '{"redirect_url":"http://localhost:3000/cb"}'),
      answer(200, '{"redirect_url":"http://x/cb?code=c"}', [
        'content-type',
        'application/json',
        'content-encoding',
        'gzip',
      ]),
      answer(200, '{"redirect_url":', JSON_TYPE),
      answer(200, '["redirect_url"]', JSON_TYPE),
      answer(200, 'redirect_url=x', ['content-type', 'text/plain']),
    ])
      assert.equal(await issOnConsentRedirect(a, request), a)
    const down = fakeRequest(fakeBackend(() => ({ status: 500, body: '' })).backend)
    const a = answer(200, '{"redirect_url":"http://localhost:3000/cb?code=c"}')
    assert.equal(await issOnConsentRedirect(a, down.request), a)
    assert.equal(down.warnings.length, 1)
  })
})

describe('oauthTokenError (RFC 6749 §5.2)', () => {
  const { request } = fakeRequest(fakeBackend(metadataOk).backend)
  const basic = fakeRequest(fakeBackend(metadataOk).backend, 'Basic YTpi').request

  test('a spent, revoked or unknown refresh token is invalid_grant, with the message as description', () => {
    for (const [code, msg] of [
      ['refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found'],
      ['refresh_token_already_used', 'Invalid Refresh Token: Already Used'],
      ['session_not_found', 'Invalid Refresh Token: No Valid Session Found'],
      ['session_expired', 'Invalid Refresh Token: Session Expired'],
      ['user_banned', 'Invalid Refresh Token: User Banned'],
    ]) {
      const out = oauthTokenError(
        answer(400, JSON.stringify({ code: 400, error_code: code, msg }), [
          'Content-Type',
          'application/json',
          'X-Sb-Error-Code',
          code!,
        ]),
        request,
      )
      assert.equal(out.status, 400)
      assert.deepEqual(JSON.parse(out.body.toString()), { error: 'invalid_grant', error_description: msg })
      assert.deepEqual(out.headers, ['Content-Type', 'application/json; charset=utf-8', 'X-Sb-Error-Code', code])
    }
  })

  test("the newer API version's shape ({code, message}) too", () => {
    const out = oauthTokenError(answer(400, '{"code":"refresh_token_not_found","message":"gone"}'), request)
    assert.deepEqual(JSON.parse(out.body.toString()), { error: 'invalid_grant', error_description: 'gone' })
  })

  test('a refused client is invalid_client: 400 with body credentials, 401 and a Basic challenge with HTTP Basic', () => {
    const refusal = answer(400, '{"code":400,"error_code":"invalid_credentials","msg":"Invalid client credentials"}')
    const body = oauthTokenError(refusal, request)
    assert.equal(body.status, 400)
    assert.deepEqual(JSON.parse(body.body.toString()), {
      error: 'invalid_client',
      error_description: 'Invalid client credentials',
    })
    const header = oauthTokenError(refusal, basic)
    assert.equal(header.status, 401)
    assert.ok(header.headers.includes('www-authenticate'))
    assert.equal(header.headers[header.headers.indexOf('www-authenticate') + 1], 'Basic realm="oauth", charset="UTF-8"')
  })

  test('403 becomes 400 (RFC 6749 has no 403); an empty message leaves the description out', () => {
    const out = oauthTokenError(answer(403, '{"error_code":"session_not_found","msg":""}'), request)
    assert.equal(out.status, 400)
    assert.deepEqual(JSON.parse(out.body.toString()), { error: 'invalid_grant' })
  })

  test('OAuth-shaped answers, successes, other statuses and unknown codes are left as they came', () => {
    for (const a of [
      answer(400, '{"error":"invalid_grant","error_description":"Invalid authorization code"}'),
      answer(200, '{"access_token":"t"}'),
      answer(429, '{"error_code":"over_request_rate_limit","msg":"slow"}'),
      answer(500, '{"error_code":"unexpected_failure","msg":"x"}'),
      answer(400, '{"error_code":"something_new","msg":"x"}'),
      answer(400, '{"msg":"no code"}'),
      answer(400, 'not json', ['content-type', 'text/plain']),
    ])
      assert.equal(oauthTokenError(a, request), a)
  })
})

describe('the OAuth routes through authgate', () => {
  const METADATA = JSON.stringify({ issuer: ISSUER, authorization_endpoint: `${ISSUER}/oauth/authorize` })

  test('the metadata says iss is supported, and is still answered from the cache', async (t) => {
    const h = await withFakeBackend({ cacheTtlMs: 10_000 })
    t.after(() => h.close())
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=600' })
      res.end(METADATA)
    }
    for (const url of ['/auth/.well-known/oauth-authorization-server', '/auth/.well-known/openid-configuration']) {
      const first = await h.app.inject({ method: 'GET', url })
      const second = await h.app.inject({ method: 'GET', url })
      assert.equal(first.json().authorization_response_iss_parameter_supported, true)
      assert.equal(second.body, first.body)
      assert.equal(first.headers['content-length'], String(first.rawPayload.length))
    }
    assert.equal(h.backend.requests.length, 2, 'one backend request per document')
  })

  test("/oauth/authorize's redirect to the client carries the issuer read from the metadata", async (t) => {
    const h = await withFakeBackend()
    t.after(() => h.close())
    h.backend.handler = (req, res) => {
      if (req.url === '/.well-known/oauth-authorization-server') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(METADATA)
      }
      res.writeHead(302, { location: 'http://localhost:3000/cb?error=invalid_scope&state=s', 'x-after': '1' })
      res.end()
    }
    const url = '/auth/oauth/authorize?client_id=c&redirect_uri=http%3A%2F%2Flocalhost%3A3000%2Fcb&scope=todos'
    for (let i = 0; i < 2; i++) {
      const res = await h.app.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 302)
      assert.equal(
        res.headers.location,
        `http://localhost:3000/cb?error=invalid_scope&state=s&iss=${encodeURIComponent(ISSUER)}`,
      )
      assert.equal(res.headers['x-after'], '1')
    }
    const metadataReads = h.backend.requests.filter((r) => r.target.startsWith('/.well-known/')).length
    assert.equal(metadataReads, 1, 'the issuer is read once')
  })

  test('/oauth/token answers a refused refresh token with invalid_grant, as the document says', async (t) => {
    const h = await withFakeBackend()
    t.after(() => h.close())
    h.backend.handler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json', 'x-sb-error-code': 'refresh_token_not_found' })
      res.end(
        '{"code":400,"error_code":"refresh_token_not_found","msg":"Invalid Refresh Token: Refresh Token Not Found"}',
      )
    }
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=refresh_token&refresh_token=spent&client_id=c',
    })
    assert.equal(res.statusCode, 400)
    assert.deepEqual(res.json(), {
      error: 'invalid_grant',
      error_description: 'Invalid Refresh Token: Refresh Token Not Found',
    })
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, { post: { responses: Record<string, unknown> } }>
    }
    assert.ok(doc.paths['/auth/oauth/token']!.post.responses['401'], 'the 401 of invalid_client is documented')
  })
})
