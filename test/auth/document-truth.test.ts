import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import Ajv2020Module from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { Ajv as AjvInstance } from 'ajv'
import fc from 'fast-check'
import { AUTH_ROUTES } from '../../src/auth/routes/index.ts'
import { PATH_SEGMENT_PATTERN } from '../../src/auth/types/common.ts'
import { checkParamSegment } from '../../src/proxy/path-guard.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'

const Ajv2020 = (Ajv2020Module as unknown as { default: new (options: object) => AjvInstance }).default
const addFormats = addFormatsModule as unknown as (ajv: AjvInstance) => AjvInstance

/**
 * The document tells the truth about Supabase Auth:
 * one test per point. What Supabase Auth itself answers is checked by the end-to-end suite, which
 * judges every answer it sees against this document.
 */
type Doc = Record<string, any>

// In a suite, so that a run whose name pattern matches none of these tests starts no harness.
describe('the OpenAPI document of the auth routes', () => {
  let h: Harness
  let doc: Doc
  before(async () => {
    // Rate limiting on as by default, so the 429 of limited routes is documented.
    h = await withFakeBackend({}, { rateLimit: undefined })
    doc = (await h.app.inject('/openapi.json')).json()
  })
  after(() => h.close())

  const op = (method: string, path: string) => {
    const o = doc.paths[`/auth${path}`]?.[method.toLowerCase()]
    assert.ok(o, `${method} ${path} is documented`)
    return o
  }
  const codes = (method: string, path: string, status: number): string[] =>
    op(method, path)['x-error-codes'][String(status)] ?? []

  describe('statuses: every status Supabase Auth answers, with its codes', () => {
    test('every bearer route documents 403 bad_jwt and session_not_found, and 401 no_authorization', () => {
      const bearer = AUTH_ROUTES.filter((r) => r.bearer)
      assert.ok(bearer.length > 10)
      for (const r of bearer) {
        const o = op(r.method, r.path)
        assert.ok(o.responses['403'], `${r.method} ${r.path} 403`)
        for (const c of ['bad_jwt', 'session_not_found']) assert.ok(codes(r.method, r.path, 403).includes(c), c)
        assert.ok(codes(r.method, r.path, 401).includes('no_authorization'))
        assert.match(o.responses['403'].description, /`session_not_found`/)
      }
    })

    test('the answers the contract tester found undocumented are listed with their codes', () => {
      const expected: Array<[string, string, number, string]> = [
        ['POST', '/signup', 422, 'user_already_exists'],
        ['POST', '/signup', 422, 'weak_password'],
        ['PUT', '/user', 422, 'weak_password'],
        ['PUT', '/user', 422, 'email_exists'],
        ['PUT', '/user', 403, 'not_admin'],
        ['POST', '/verify', 403, 'otp_expired'],
        ['POST', '/verify', 429, 'over_request_rate_limit'],
        ['GET', '/verify', 429, 'over_request_rate_limit'],
        ['PATCH', '/passkeys/{id}', 404, 'validation_failed'],
        ['DELETE', '/passkeys/{id}', 404, 'validation_failed'],
        ['GET', '/.well-known/oauth-authorization-server', 404, 'feature_disabled'],
        ['POST', '/token', 404, 'flow_state_not_found'],
        ['POST', '/token', 409, 'conflict'],
      ]
      for (const [method, path, status, code] of expected) {
        assert.ok(op(method, path).responses[String(status)], `${method} ${path} documents ${status}`)
        assert.ok(codes(method, path, status).includes(code), `${method} ${path} ${status} lists ${code}`)
      }
    })

    test('each operation has a table of its error statuses and codes in its description', () => {
      const o = op('PUT', '/user')
      assert.match(o.description, /\| Status \| Error codes \|/)
      assert.match(o.description, /\| 422 \| .*`email_exists`/)
      for (const status of Object.keys(o['x-error-codes'])) assert.ok(o.responses[status], status)
    })

    test("429 on a limited route names both limits; the backend's own limit elsewhere", () => {
      const limited = op('POST', '/signup').responses['429'].description
      assert.match(limited, /authgate's own limits .*Supabase Auth was not contacted/)
      assert.match(limited, /e-mail and SMS budgets: `over_email_send_rate_limit`/)
      assert.match(limited, /or Supabase Auth's limiter \(`over_request_rate_limit`/)
      const verify = op('POST', '/verify').responses['429'].description
      assert.doesNotMatch(verify, /not contacted/)
      assert.match(verify, /Supabase Auth's limiter/)
    })

    test("the gateway's own statuses stay", () => {
      const o = op('POST', '/signup')
      for (const s of ['400', '413', '415', '429', '500', '502', '504']) assert.ok(o.responses[s], s)
      assert.ok(o.responses['429'].headers['Retry-After'])
    })

    test('OAuth-shaped errors are documented where Supabase Auth uses them', () => {
      const schema = op('POST', '/oauth/token').responses['400'].content['application/json'].schema
      assert.equal(schema.anyOf.length, 2)
      assert.ok(doc.components.schemas.OAuthErrorResponse)
    })
  })

  describe('schemas: what Supabase Auth accepts', () => {
    const param = (method: string, path: string, name: string) =>
      op(method, path).parameters.find((p: { name: string }) => p.name === name)

    test('grant_type of POST /token is required, with its values', () => {
      const p = param('POST', '/token', 'grant_type')
      assert.equal(p.required, true)
      assert.deepEqual(p.schema.enum, ['password', 'refresh_token', 'pkce', 'id_token', 'web3'])
    })

    test("GET /verify's type is an enum, and authgate refuses another type before forwarding", async () => {
      assert.deepEqual(param('GET', '/verify', 'type').schema.enum, [
        'signup',
        'invite',
        'recovery',
        'magiclink',
        'email_change',
      ])
      h.backend.requests.length = 0
      const bad = await h.app.inject({ url: '/auth/verify?token=pkce_abc&type=nope' })
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().error_code, 'validation_failed')
      assert.match(bad.json().msg, /querystring\/type/)
      // Repeated names count as Supabase Auth counts them: the first value.
      const first = await h.app.inject({ url: '/auth/verify?token=pkce_abc&type=signup&type=nope' })
      assert.equal(first.statusCode, 200)
      assert.equal(h.backend.requests.length, 1)
    })

    test('app_metadata is not a field of the user update', () => {
      assert.equal(doc.components.schemas.UpdateUserRequest.properties.app_metadata, undefined)
      assert.match(doc.components.schemas.UpdateUserRequest.description, /not_admin/)
    })

    test('routes that read no body document it as optional', () => {
      for (const path of ['/passkeys/registration/options', '/passkeys/authentication/options', '/reauthenticate'])
        assert.equal(op('POST', path).requestBody.required, false, path)
      assert.equal(op('POST', '/signup').requestBody.required, true)
    })

    test('a PKCE challenge without its method is refused before it reaches Supabase Auth (PUT /user)', async () => {
      h.backend.requests.length = 0
      for (const body of [
        { email: 'a@example.com', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM' },
        {
          email: 'a@example.com',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: null,
        },
      ]) {
        const res = await h.app.inject({ method: 'PUT', url: '/auth/user', payload: body })
        assert.equal(res.statusCode, 400)
        assert.equal(res.json().msg, 'PKCE flow requires code_challenge_method and code_challenge')
      }
      // supabase-js outside PKCE mode: both null, accepted.
      const implicit = await h.app.inject({
        method: 'PUT',
        url: '/auth/user',
        payload: { email: 'a@example.com', code_challenge: null, code_challenge_method: null },
      })
      assert.equal(implicit.statusCode, 200)
      assert.equal(h.backend.requests.length, 1)
    })

    test('pairs that exclude each other are in the schemas', () => {
      const s = doc.components.schemas
      // A field counts as given when it is a non-empty string: `null` and `""` are absent to the backend.
      const given = { type: 'string', minLength: 1 }
      assert.deepEqual(s.SignupRequest.not, {
        required: ['email', 'phone'],
        properties: { email: given, phone: given },
      })
      assert.deepEqual(s.VerifyRequest.allOf[2], {
        not: { required: ['token', 'token_hash'], properties: { token: given, token_hash: given } },
      })
      assert.deepEqual(s.VerifyRequest.allOf[5].if, { required: ['token_hash'], properties: { token_hash: given } })
      assert.ok(s.UpdateUserRequest.dependentSchemas.code_challenge)
    })

    test("every path parameter shows the guard's rule, and the pattern is exactly the guard", () => {
      for (const r of AUTH_ROUTES.filter((x) => x.params)) {
        for (const p of op(r.method, r.path).parameters.filter((x: { in: string }) => x.in === 'path')) {
          assert.equal(p.schema.pattern, PATH_SEGMENT_PATTERN, `${r.method} ${r.path} ${p.name}`)
          assert.match(p.description, /One path segment/)
        }
      }
      const re = new RegExp(PATH_SEGMENT_PATTERN, 'u')
      const segment = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 12 }),
        fc.constantFrom('.', '..', '...', '/', '\\', 'a/b', '\u0000', '\u0085', '%', ''),
      )
      fc.assert(
        fc.property(segment, (value) => {
          // The document speaks of the decoded value; the guard reads the raw, percent-encoded segment.
          let encoded: string
          try {
            encoded = encodeURIComponent(value)
          } catch {
            return // a lone surrogate: no client can send it
          }
          assert.equal(checkParamSegment(encoded).ok, re.test(value), JSON.stringify(value))
        }),
        { numRuns: 2000 },
      )
    })

    test('the __proto__ refusal is visible on every request body', () => {
      for (const r of AUTH_ROUTES.filter((x) => x.body && x.kind === 'typed')) {
        const media = op(r.method, r.path).requestBody.content['application/json']
        const schema = media.schema.$ref ? doc.components.schemas[media.schema.$ref.split('/').pop()] : media.schema
        assert.deepEqual(schema.propertyNames.not, { const: '__proto__' }, `${r.method} ${r.path}`)
      }
      // And on the objects inside, declared or free-form: the reader refuses the key at any depth.
      const signup = doc.components.schemas.SignupRequest
      assert.deepEqual(signup.properties.data.propertyNames, { not: { const: '__proto__' } })
      const meta = signup.properties.gotrue_meta_security
      const metaSchema = meta.$ref ? doc.components.schemas[meta.$ref.split('/').pop()] : meta
      assert.deepEqual(metaSchema.propertyNames, { not: { const: '__proto__' } })
    })

    test("an empty form on /oauth/token is a form (its missing grant_type), not 'Request body is empty'", async () => {
      h.backend.requests.length = 0
      const res = await h.app.inject({
        method: 'POST',
        url: '/auth/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: '',
      })
      assert.deepEqual(res.json(), { error: 'invalid_request', error_description: 'grant_type is required' })
      assert.equal(h.backend.requests.length, 0)
      // An empty body declared JSON is still a JSON error.
      const json = await h.app.inject({
        method: 'POST',
        url: '/auth/oauth/token',
        headers: { 'content-type': 'application/json' },
        payload: '',
      })
      assert.equal(json.json().error_code, 'bad_json')
    })

    test('a method a mounted path does not serve is 405 with Allow, not 404', async () => {
      h.backend.requests.length = 0
      const cases: Array<[string, string, string]> = [
        ['PATCH', '/auth/settings', 'GET'],
        ['POST', '/auth/user', 'GET, PUT'],
        ['GET', '/auth/passkeys/abc', 'PATCH, DELETE'],
        ['PUT', '/auth/factors/8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71', 'DELETE'],
        ['DELETE', '/auth/reauthenticate', 'GET, POST'],
      ]
      for (const [method, url, allow] of cases) {
        const res = await h.app.inject({ method: method as 'GET', url })
        assert.equal(res.statusCode, 405, `${method} ${url}`)
        assert.equal(res.headers.allow, allow, `${method} ${url}`)
        assert.equal(res.json().error_code, 'method_not_allowed')
      }
      assert.equal((await h.app.inject({ method: 'GET', url: '/auth/nope' })).statusCode, 404)
      assert.equal(h.backend.requests.length, 0)
    })
  })

  describe('examples: whole requests that the schemas accept', () => {
    let ajv: AjvInstance
    before(() => {
      ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }))
      ajv.addSchema({ $id: 'doc', ...doc })
    })
    const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')

    test('the sign-up shows e-mail, phone and anonymous sign-ups first, and each example validates', () => {
      const examples = op('POST', '/signup').requestBody.content['application/json'].examples
      assert.deepEqual(Object.keys(examples), ['email', 'phone', 'anonymous'])
      let count = 0
      for (const r of AUTH_ROUTES.filter((x) => x.examples)) {
        const media = op(r.method, r.path).requestBody.content['application/json']
        const validate = ajv.compile({
          $ref: `doc#/${pointer('paths', `/auth${r.path}`, r.method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema')}`,
        })
        for (const [name, e] of Object.entries(media.examples as Record<string, { value: unknown }>)) {
          assert.ok(validate(e.value), `${r.method} ${r.path} ${name}: ${JSON.stringify(validate.errors)}`)
          count++
        }
      }
      assert.ok(count >= 15, `${count} examples`)
    })

    test('an example that needs a query parameter says which (x-query), matching the parameter', () => {
      const o = op('POST', '/token')
      const first = Object.values(o.requestBody.content['application/json'].examples)[0] as Record<string, any>
      assert.deepEqual(first['x-query'], { grant_type: 'password' })
      const p = o.parameters.find((x: { name: string }) => x.name === 'grant_type')
      assert.equal(p.example, 'password')
    })

    test('every JSON body either has whole examples or no per-field combination the schema refuses', () => {
      for (const r of AUTH_ROUTES.filter((x) => x.body && x.kind === 'typed' && !x.examples)) {
        const media = op(r.method, r.path).requestBody.content['application/json']
        const schema = media.schema.$ref ? doc.components.schemas[media.schema.$ref.split('/').pop()] : media.schema
        // What a reference page composes when the operation has no example: every field's example.
        const composed = Object.fromEntries(
          Object.entries((schema.properties ?? {}) as Record<string, { examples?: unknown[] }>)
            .filter(([, p]) => Array.isArray(p.examples))
            .map(([k, p]) => [k, p.examples![0]]),
        )
        const validate = ajv.compile({
          $ref: `doc#/${pointer('paths', `/auth${r.path}`, r.method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema')}`,
        })
        assert.ok(
          validate(composed),
          `${r.method} ${r.path}: ${JSON.stringify(validate.errors)} for ${JSON.stringify(composed)}`,
        )
      }
    })
  })
})
