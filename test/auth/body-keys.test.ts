import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  caseFoldedKey,
  flatObjectKeys,
  goFoldedKey,
  keyPath,
  repeatedKey,
  type WalkWork,
} from '../../src/auth/body-keys.ts'
import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, unclearKey } from '../../src/auth/body.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'

const JSON_CT = { 'content-type': 'application/json' }

describe('keys folded as Go folds them', () => {
  test('ASCII letters fold to upper case, digits and punctuation stay', () => {
    assert.equal(goFoldedKey('captcha_token'), 'CAPTCHA_TOKEN')
    assert.equal(goFoldedKey('Email'), goFoldedKey('eMAIL'))
    assert.equal(goFoldedKey('a-1_[]'), 'A-1_[]')
  })

  test('the long s and the Kelvin sign fold to S and K; other letters do not reach ASCII', () => {
    assert.equal(goFoldedKey('pa\u017F\u017Fword'), 'PASSWORD')
    assert.equal(goFoldedKey('to\u212Aen'), 'TOKEN')
    // U+0130 and U+0131 are in case orbits of their own for Go's simple folding.
    assert.notEqual(goFoldedKey('ema\u0131l'), 'EMAIL')
    assert.notEqual(goFoldedKey('ema\u0130l'), 'EMAIL')
    assert.equal(goFoldedKey('é'), 'é')
  })
})

describe('repeated keys', () => {
  test('found at the top and nested, with their place', () => {
    assert.deepEqual(repeatedKey('{"email":"a","email":null}'), { path: [], key: 'email' })
    const nested = repeatedKey('{"a":[1,{"x":1}],"m":{"c":"x","c":"y"}}')
    assert.deepEqual(nested, { path: ['m'], key: 'c' })
    assert.equal(keyPath(nested!), 'm.c')
    assert.deepEqual(repeatedKey('[{"k":1},{"k":1,"k":2}]'), { path: [1], key: 'k' })
  })

  test('escaped spellings are the same key; values and other objects are not keys', () => {
    assert.deepEqual(repeatedKey('{"email":"a","\\u0065mail":"b"}'), { path: [], key: 'email' })
    assert.deepEqual(repeatedKey('{"a\\nb":1,"a\\u000Ab":2}'), { path: [], key: 'a\nb' })
    assert.deepEqual(repeatedKey('{"\\"\\\\\\/":1,"\\u0022\\u005c/":2}'), { path: [], key: '"\\/' })
    assert.deepEqual(repeatedKey('{"\\ud83d\\ude00":1,"😀":2}'), { path: [], key: '😀' })
    assert.equal(repeatedKey('{"a\\tb":1,"a\\bb":2,"a\\fb":3,"a\\rb":4,"a/b":5}'), undefined)
    assert.equal(repeatedKey('{"a":"a","b":"a","c":{"a":"\\"a"},"d":["a","a"]}'), undefined)
    assert.equal(repeatedKey('{"a":{"k":1},"b":{"k":1}}'), undefined)
    assert.equal(repeatedKey('"x"'), undefined)
  })

  test('an empty object is closed: the strings after it in an array are values, not keys', () => {
    assert.equal(repeatedKey('{"a":[{},"x","x"]}'), undefined)
    assert.equal(repeatedKey('[[{}],"k",{"k":1,"j":[{}, "k"],"m":{}}]'), undefined)
    assert.deepEqual(repeatedKey('{"a":[{},"x",{"k":1,"k":2}]}'), { path: ['a', 2], key: 'k' })
    assert.deepEqual(repeatedKey('{"a":{},"a":1}'), { path: [], key: 'a' })
  })
})

/** 1 MiB: `{"email":…,"data":` nested `depth` deep, then `[],[],…` up to the size, then closed. */
function deepThenWide(depth: number, size = 1024 * 1024, head = '{"email":"a@example.com","data":'): string {
  const open = head + '['.repeat(depth)
  const close = ']'.repeat(depth) + '}'
  const fill = Math.floor((size - open.length - close.length - 2) / 3)
  return open + '[],'.repeat(fill) + '[]' + close
}

describe('the key walk is linear in the body', () => {
  test('a body nested 510 deep then filled with [],[],… costs a step per character and per bracket', () => {
    const text = deepThenWide(510)
    const work: WalkWork = { steps: 0 }
    assert.equal(repeatedKey(text, work), undefined)
    // Characters, plus one frame per `[`: a copy of the path per bracket would be ~510 steps each.
    assert.ok(work.steps <= 2 * text.length, `${work.steps} steps for ${text.length} characters`)
    JSON.parse(text) // the walk's input is a parsed text
  })

  test('the path is built once, for the repeated key only', () => {
    const text = deepThenWide(510, 1024 * 1024, '{"m":').replace(/\[\]\]*\}$/, (end) => `{"k":1,"k":2}${end.slice(2)}`)
    const work: WalkWork = { steps: 0 }
    const found = repeatedKey(text, work)
    assert.equal(found?.key, 'k')
    assert.equal(found.path.length, 511) // `m`, then an index per array
    assert.ok(work.steps <= 2 * text.length + 512, `${work.steps} steps for ${text.length} characters`)
  })
})

describe('keys in another case than a declared field', () => {
  const schema = {
    type: 'object',
    properties: {
      email: { type: 'string' },
      gotrue_meta_security: { type: ['object', 'null'], properties: { captcha_token: { type: 'string' } } },
      data: { type: 'object', patternProperties: { '^.*$': {} } },
      list: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } } } },
    },
    anyOf: [{ properties: { phone: { type: 'string' } } }],
  }

  test('a key folding to a declared field is found, at any depth where fields are declared', () => {
    assert.deepEqual(caseFoldedKey({ Email: 'x' }, schema), { path: [], key: 'Email', field: 'email' })
    assert.deepEqual(caseFoldedKey({ PHONE: 'x' }, schema), { path: [], key: 'PHONE', field: 'phone' })
    assert.deepEqual(caseFoldedKey({ gotrue_meta_security: { Captcha_Token: 'x' } }, schema), {
      path: ['gotrue_meta_security'],
      key: 'Captcha_Token',
      field: 'captcha_token',
    })
    assert.deepEqual(caseFoldedKey({ list: [{ id: 'a' }, { ID: 'b' }] }, schema), {
      path: ['list', 1],
      key: 'ID',
      field: 'id',
    })
  })

  test('exact names, unknown keys and free-form objects pass', () => {
    assert.equal(caseFoldedKey({ email: 'x', Other: 1, data: { Email: 'x', email: 'y' } }, schema), undefined)
    assert.equal(caseFoldedKey({ gotrue_meta_security: null, list: 'x' }, schema), undefined)
    assert.equal(caseFoldedKey({ list: [1] }, { type: 'object', properties: { list: { type: 'array' } } }), undefined)
    assert.equal(caseFoldedKey('x', schema), undefined)
  })

  test('the refusal names the key and the field', () => {
    assert.deepEqual(unclearKey('{"Email":"x"}', { Email: 'x' }, schema), {
      code: 'validation_failed',
      message:
        'body/Email differs only in case from the field email, which Supabase Auth would read it as: send it as email',
    })
    assert.equal(unclearKey('{"email":"x"}', { email: 'x' }, schema), undefined)
  })
})

describe('bodies the backend would read otherwise are refused and not forwarded', () => {
  let h: Harness
  before(async () => {
    h = await withFakeBackend()
  })
  after(() => h.close())

  const CASES: Array<[string, string, string]> = [
    ['/auth/token?grant_type=password', '{"Email":"victim@example.com","password":"x"}', 'validation_failed'],
    ['/auth/token?grant_type=password', '{"EMAIL":"victim@example.com","password":"x"}', 'validation_failed'],
    [
      '/auth/token?grant_type=password',
      '{"email":"decoy@example.com","Email":"victim@example.com","password":"x"}',
      'validation_failed',
    ],
    ['/auth/token?grant_type=password', '{"email":"victim@example.com","email":null,"password":"x"}', 'bad_json'],
    ['/auth/otp', '{"phone":"15550009999","Phone":"15550009001"}', 'validation_failed'],
    ['/auth/signup', '{"email":"a@example.com","Password":"correct-horse-battery"}', 'validation_failed'],
    ['/auth/signup', '{"email":"a@example.com","pa\u017F\u017Fword":"correct-horse-battery"}', 'validation_failed'],
    ['/auth/otp', '{"email":"a@example.com","gotrue_meta_security":{"CAPTCHA_TOKEN":"x"}}', 'validation_failed'],
    [
      '/auth/otp',
      '{"email":"a@example.com","gotrue_meta_security":{"captcha_token":"x"},"gotrue_meta_security":{}}',
      'bad_json',
    ],
  ]
  for (const [url, body, code] of CASES) {
    test(`${url} ${body}`, async () => {
      h.backend.requests.length = 0
      const res = await h.app.inject({ method: 'POST', url, payload: body, headers: JSON_CT })
      assert.equal(res.statusCode, 400, res.body)
      assert.equal(res.json().error_code, code)
      assert.equal(h.backend.requests.length, 0)
    })
  }

  test('PUT /user with the new e-mail in another case', async () => {
    h.backend.requests.length = 0
    const res = await h.app.inject({
      method: 'PUT',
      url: '/auth/user',
      payload: '{"Email":"new@example.com"}',
      headers: { ...JSON_CT, authorization: 'Bearer x' },
    })
    assert.equal(res.statusCode, 400, res.body)
    assert.equal(h.backend.requests.length, 0)
  })

  test('an array holding an empty object then a string is read, not a 500', async () => {
    h.backend.requests.length = 0
    const body = '{"email":"a@example.com","password":"correct-horse-battery","data":{"a":[{},"x"]}}'
    const res = await h.app.inject({ method: 'POST', url: '/auth/signup', payload: body, headers: JSON_CT })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(h.backend.requests.length, 1)
  })

  test(`more than ${MAX_JSON_CONTAINERS} objects and arrays are refused before parsing, at any depth`, async () => {
    const big = await withFakeBackend({ bodyLimit: 1024 * 1024 })
    try {
      for (const depth of [0, 510]) {
        const res = await big.app.inject({
          method: 'POST',
          url: '/auth/recover',
          payload: deepThenWide(depth),
          headers: JSON_CT,
        })
        assert.equal(res.statusCode, 400, res.body)
        assert.equal(res.json().error_code, 'bad_json')
        assert.match(res.json().msg, /more than 10000 objects and arrays/)
      }
      // At both bounds (the root object, 510 arrays, then arrays at depth 512, 10,000 in all): read and forwarded.
      const under =
        '{"email":"a@example.com","data":' +
        '['.repeat(MAX_JSON_DEPTH - 2) +
        '[],'.repeat(MAX_JSON_CONTAINERS - MAX_JSON_DEPTH) +
        '[]' +
        ']'.repeat(MAX_JSON_DEPTH - 2) +
        '}'
      const res = await big.app.inject({ method: 'POST', url: '/auth/recover', payload: under, headers: JSON_CT })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(big.backend.requests.length, 1)
      const over = under.replace('[]', '[],[]')
      const refused = await big.app.inject({ method: 'POST', url: '/auth/recover', payload: over, headers: JSON_CT })
      assert.equal(refused.statusCode, 400, refused.body)
      assert.equal(big.backend.requests.length, 1)
    } finally {
      await big.close()
    }
  })

  test('keys inside user metadata are the client’s, in any case, and are forwarded', async () => {
    h.backend.requests.length = 0
    const body = '{"email":"a@example.com","data":{"Email":"x","email":"y"}}'
    const res = await h.app.inject({ method: 'POST', url: '/auth/otp', payload: body, headers: JSON_CT })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(h.backend.requests.length, 1)
  })
})

describe('a flat object’s keys counted in place of the walk', () => {
  test('counted only for one object holding no object or array', () => {
    assert.equal(flatObjectKeys('{"email":"user@example.com","password":"a\\",b{[,"}'), 2)
    assert.equal(flatObjectKeys('{}'), 0)
    assert.equal(flatObjectKeys(' { "a" : 1 , "a" : null } '), 2)
    assert.equal(flatObjectKeys('{"a":{"b":1}}'), undefined)
    assert.equal(flatObjectKeys('{"a":[1]}'), undefined)
    assert.equal(flatObjectKeys('[1,2]'), undefined)
  })

  test('unclearKey finds the same repeated key as the walk, whatever the spelling', () => {
    const keys = ['a', 'b', '\\u0061', 'A', '\\ud800', '\\ud801', '\\udc00x', 'e\\"', 'é', 'a,b', '{']
    const values = ['1', 'null', '"x,\\"{"', 'true', '[1]', '{"a":1,"a":2}', '{}']
    let seen = 0
    let random = 7
    const next = (n: number) => {
      random = (random * 1103515245 + 12345) % 2 ** 31
      return random % n
    }
    for (let round = 0; round < 3000; round++) {
      const pairs = Array.from({ length: next(5) }, () => `"${keys[next(keys.length)]}":${values[next(values.length)]}`)
      const text = `{${pairs.join(',')}}`
      const value = JSON.parse(text) as unknown
      const walked = repeatedKey(text)
      const got = unclearKey(text, value, { type: 'object' })
      if (walked) {
        seen++
        assert.equal(got?.code, 'bad_json', text)
        assert.match(
          got.message,
          new RegExp(`the key ${keyPath(walked).replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')} more than once`),
          text,
        )
      } else assert.equal(got?.code === 'bad_json', false, text)
    }
    assert.ok(seen > 300, `${seen} bodies with a repeated key`)
  })
})
