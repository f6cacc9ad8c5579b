import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { MAX_JSON_DEPTH, nestingProblem, readBody } from '../../src/auth/body.ts'
import { AUTH_ROUTES, routeName } from '../../src/auth/routes/index.ts'
import { withFakeBackend } from '../support/app.ts'

const route = (name: string) => AUTH_ROUTES.find((r) => routeName(r) === name)!
const read = (name: string, text: string) => readBody(route(name), Buffer.from(text), 'application/json')

describe('values read as Go reads them', () => {
  test('a lone surrogate is U+FFFD, in values and keys, as Go decodes it; pairs are kept', () => {
    assert.deepEqual(read('POST /recover', '{"email":"a\\ud800@example.com"}'), {
      body: { email: 'a\uFFFD@example.com' },
    })
    // Two spellings Go reads as one account are one account to the limits too.
    assert.deepEqual(
      read('POST /recover', '{"email":"a\\udbff@example.com"}'),
      read('POST /recover', '{"email":"a\\udc00@example.com"}'),
    )
    assert.deepEqual(read('POST /signup', '{"data":{"k\\udc00":["\\ud83d\\ude00","x\\uDFFF"]}}'), {
      body: { data: { 'k\uFFFD': ['😀', 'x\uFFFD'] } },
    })
  })

  test('a number beyond float64, which Go cannot decode, is refused wherever it is', () => {
    // Also a long mantissa with a short exponent: 250 digits and e60 is 1e309.
    for (const n of ['1e400', '-1E+309', '9'.repeat(400), `1${'0'.repeat(249)}e60`, `-${'9'.repeat(210)}E+99`])
      assert.deepEqual(read('POST /signup', `{"email":"a@example.com","data":{"a":[${n}]}}`), {
        refused: 'bad_json',
        message: 'Could not parse request body as JSON: a number is beyond the range of a float64',
      })
    // Within the range, and digits in strings, are read.
    const big = read(
      'POST /signup',
      `{"email":"a@example.com","data":{"a":1.7e308,"b":"1e400","c":1e-400,"d":1${'0'.repeat(249)}e58}}`,
    )
    assert.ok('body' in big)
  })
})

describe("a form read as Go's FormValue reads it", () => {
  const form = (body: string, query: Record<string, string>) =>
    readBody(route('POST /oauth/token'), Buffer.from(body), 'application/x-www-form-urlencoded', query)

  test("a field the form lacks and the query names is refused: Go would read the query's value", () => {
    assert.deepEqual(form('grant_type=authorization_code&code=c&code_verifier=v', { client_id: 'evil' }), {
      refused: 'validation_failed',
      message:
        'querystring/client_id names a field of the form, which Supabase Auth may read from the query: send it in the body',
    })
  })

  test("the form's own value comes first to Go too; other query names are not the form's", () => {
    const body = 'grant_type=authorization_code&code=c&code_verifier=v&client_id=mine'
    const read = form(body, { client_id: 'other', x: '1' })
    assert.ok('body' in read)
    assert.deepEqual(
      { ...(read.body as object) },
      {
        grant_type: 'authorization_code',
        code: 'c',
        code_verifier: 'v',
        client_id: 'mine',
      },
    )
  })

  test('over HTTP, a client_id in the query of /oauth/token is refused and nothing is forwarded (a replaced client’s id cannot pass there)', async (t) => {
    const h = await withFakeBackend()
    t.after(() => h.close())
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/oauth/token?client_id=6ba7b810-9dad-11d1-80b4-00c04fd430c8',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=refresh_token&refresh_token=r',
    })
    assert.equal(res.statusCode, 400)
    assert.equal(res.json().error_code, 'validation_failed')
    assert.equal(h.backend.requests.length, 0)
  })

  test('a form’s `__proto__` key is still refused by the validator (only JSON-only routes leave that rule to their reader)', async (t) => {
    const h = await withFakeBackend()
    t.after(() => h.close())
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=refresh_token&refresh_token=r&__proto__=x',
    })
    assert.equal(res.statusCode, 400, res.body)
    assert.equal(res.json().error_code, 'validation_failed', res.body)
    assert.equal(h.backend.requests.length, 0)
  })
})

test('a body of at most MAX_JSON_DEPTH bytes is under both bracket bounds, and one byte more can be over', () => {
  assert.equal(nestingProblem(Buffer.from('['.repeat(MAX_JSON_DEPTH))), undefined)
  assert.equal(
    nestingProblem(Buffer.from('{"email":"user@example.com","password":"correct-horse-battery"}')),
    undefined,
  )
  assert.match(nestingProblem(Buffer.from('['.repeat(MAX_JSON_DEPTH + 1))) ?? '', /nests deeper than 512 levels/)
  const token = AUTH_ROUTES.find((r) => r.method === 'POST' && r.path === '/token')!
  const deep = Buffer.from('['.repeat(MAX_JSON_DEPTH + 1))
  assert.deepEqual(readBody(token, deep, 'application/json'), {
    refused: 'bad_json',
    message: `Request body nests deeper than ${MAX_JSON_DEPTH} levels`,
  })
})
