/**
 * Generated requests for the Go oracle (fast-check): for each route with a body, a body built from
 * the route's schema and then mutated where readers disagree — keys in other cases and Unicode folds
 * (`ſ`→S, `K`→K), keys given twice at any depth, `null`/`""`/values of other types, invalid UTF-8 and
 * lone surrogates, escapes, huge numbers, nesting, a byte order mark, whitespace —; queries with
 * repeats, `;`, bad escapes, `+` and `%20`, empty names; forms and Basic credentials likewise.
 */
import fc from 'fast-check'
import { isRecord } from '../../src/core/is-record.ts'
import { AUTH_ROUTES, routeName, type AuthRoute } from '../../src/auth/routes/index.ts'
import type { RawRequest } from './go-oracle.ts'

type Schema = Record<string, unknown>

/** A generated request and the route it is for. */
export interface Case {
  route: string
  request: RawRequest
}

/** The routes whose body authgate reads (typed, with a body schema). */
export const BODY_ROUTES: readonly AuthRoute[] = AUTH_ROUTES.filter((r) => r.kind === 'typed' && r.body !== undefined)

function properties(schema: Schema, into = new Map<string, Schema>()): Map<string, Schema> {
  if (isRecord(schema.properties))
    for (const [k, v] of Object.entries(schema.properties)) if (isRecord(v) && !into.has(k)) into.set(k, v)
  for (const kw of ['anyOf', 'oneOf', 'allOf'])
    for (const m of (schema[kw] as unknown[] | undefined) ?? []) if (isRecord(m)) properties(m, into)
  return into
}

function types(schema: Schema): string[] {
  if (typeof schema.type === 'string') return [schema.type]
  if (Array.isArray(schema.type)) return schema.type as string[]
  const union = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined
  return Array.isArray(union) ? union.flatMap((s) => (isRecord(s) ? types(s) : [])) : []
}

// A byte that is not UTF-8, written into the text as a private-use character and swapped for the
// byte when the body is encoded.
const BAD_BYTE = '\uE000'
const BAD_BYTES: Record<string, number[]> = { '\uE000': [0xff] }
const BAD_SEQUENCE = '\uE001' // an encoded surrogate, ED A0 80
BAD_BYTES[BAD_SEQUENCE] = [0xed, 0xa0, 0x80]

/** The raw text of JSON strings (inside the quotes), escapes and all. */
const stringText: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a@example.com', 'victim@example.com', 'A@Example.com ', '+1 555 000 0001') },
  {
    weight: 6,
    arbitrary: fc.constantFrom('15550000001', 'secret123', 'x', '', 'pkce', 'S256', 'plain', 'signup', 'email', 'sms'),
  },
  { weight: 2, arbitrary: fc.constantFrom('totp', 'phone', 'recovery', 'magiclink', 'https://example.com/cb', 'deny') },
  { weight: 2, arbitrary: fc.constantFrom('8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71', 'authorization_code', 'approve') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '\\u0000',
      'a\\u0000@example.com',
      '\\ud800@example.com',
      'a\\udc00',
      '\\ud83d\\ude00',
      '\\u017f',
      '\\u0061@example.com',
      'a' + BAD_BYTE + '@example.com',
      BAD_SEQUENCE,
      '\\"\\\\\\/\\b\\f\\n\\r\\t',
      'ſ',
      'K',
      'é',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s).slice(1, -1)) },
)

/** Literal texts of another type, or of extreme size. */
const oddLiteral = fc.constantFrom(
  'null',
  '""',
  '0',
  '1',
  '-0',
  '1.5',
  '1e400',
  '-1e400',
  '123456789012345678901234567890',
  '1E2',
  'true',
  'false',
  '[]',
  '{}',
  '["x"]',
  '{"a":1}',
)

/** Values a field's name calls for, where its schema's formats and enumerations sit too deep to read. */
const BY_NAME: Record<string, fc.Arbitrary<string>> = {
  email: fc.constantFrom(
    'a@example.com',
    'Victim@Example.com ',
    'a\\u0000@example.com',
    'a\\ud800@example.com',
    'b@example.com',
  ),
  phone: fc.constantFrom('15550000001', '+1 555 000 0001', '+15550000002'),
  challenge_id: fc.constant('8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71'),
  grant_type: fc.constantFrom('authorization_code', 'refresh_token'),
}

/** A JSON value as text, built from a schema (and the field's name). */
function valueText(schema: Schema, depth = 0, name = ''): fc.Arbitrary<string> {
  const named = BY_NAME[name]
  if (named !== undefined)
    return fc.oneof(
      { weight: 8, arbitrary: named.map((v) => `"${v}"`) },
      { weight: 2, arbitrary: valueText(schema, depth) },
    )
  const t = types(schema).filter((x) => x !== 'null')
  const own: fc.Arbitrary<string>[] = []
  const enums = [schema, ...(((schema.anyOf ?? schema.oneOf) as Schema[] | undefined) ?? [])].flatMap((s) =>
    Array.isArray(s.enum) ? (s.enum as unknown[]).filter((x) => typeof x === 'string') : [],
  ) as string[]
  const formats = [schema, ...(((schema.anyOf ?? schema.oneOf) as Schema[] | undefined) ?? [])].map((s) => s.format)
  if (enums.length > 0) own.push(fc.constantFrom(...enums).map((e) => `"${e}"`))
  else if (formats.includes('uuid')) own.push(fc.constant('"8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71"'))
  else if (formats.includes('email'))
    own.push(
      fc
        .constantFrom('a@example.com', 'Victim@Example.com ', 'a\\u0000@example.com', 'a\\ud800@example.com')
        .map((e) => `"${e}"`),
    )
  if (t.includes('string') || t.length === 0) own.push(stringText.map((s) => `"${s}"`))
  if (t.includes('boolean')) own.push(fc.constantFrom('true', 'false'))
  if (t.includes('integer') || t.includes('number')) own.push(fc.constantFrom('0', '6', '1.5', '1e400'))
  if (t.includes('array')) {
    const items = isRecord(schema.items) ? schema.items : {}
    own.push(fc.array(valueText(items, depth + 1), { maxLength: 3 }).map((xs) => `[${xs.join(',')}]`))
  }
  if (t.includes('object')) {
    const props = properties(schema)
    own.push(props.size > 0 && depth < 3 ? objectText(props, depth + 1) : freeForm(depth + 1))
  }
  if (own.length === 0) own.push(freeForm(depth + 1))
  return fc.oneof({ weight: 19, arbitrary: fc.oneof(...own) }, { weight: 1, arbitrary: oddLiteral })
}

/** A free-form object (user metadata): any keys, including spellings of declared ones, nested a little or deep. */
function freeForm(depth: number): fc.Arbitrary<string> {
  const leaf = fc.oneof(
    stringText.map((s) => `"${s}"`),
    oddLiteral,
  )
  const inner: fc.Arbitrary<string> =
    depth > 3
      ? leaf
      : fc.oneof(
          leaf,
          fc.array(leaf, { maxLength: 3 }).map((xs) => `[${xs.join(',')}]`),
          fc.constantFrom('[{},"x"]', '[{},{}]', '[[],"x",{"a":{}}]'),
        )
  return fc.oneof(
    { weight: 6, arbitrary: entries(fc.constantFrom('name', 'Name', 'a', 'email', 'x'), inner) },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 1, max: 40 })
        .chain((n) => inner.map((v) => `{"deep":${'['.repeat(n)}${v}${']'.repeat(n)}}`)),
    },
  )
}

/** `arb`'s value once in `n + 1` times, else null. */
const rarely = <T>(arb: fc.Arbitrary<T>, n: number): fc.Arbitrary<T | null> =>
  fc.oneof({ weight: n, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb })

/** Key spellings: as declared, in other cases, with `ſ`/`K`, with a `\u` escape, or twice. */
function spelled(key: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.constant(key) },
    { weight: 1, arbitrary: fc.constant(key.toUpperCase()) },
    { weight: 1, arbitrary: fc.constant(key.charAt(0).toUpperCase() + key.slice(1)) },
    { weight: 1, arbitrary: fc.constant(key.replaceAll('s', 'ſ').replaceAll('k', 'K')) },
    { weight: 1, arbitrary: fc.constant(key.replace('S', 'ſ').replaceAll('K', 'K')) },
    {
      weight: 1,
      arbitrary: fc
        .nat({ max: Math.max(0, key.length - 1) })
        .map((i) => key.slice(0, i) + `\\u${key.charCodeAt(i).toString(16).padStart(4, '0')}` + key.slice(i + 1)),
    },
    { weight: 1, arbitrary: fc.constant(key + ' ') },
  )
}

const ws = fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n ')

/** An object's text from generated entries (`keys` spelled, values), with keys repeated at times. */
function entries(keys: fc.Arbitrary<string>, value: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.array(fc.tuple(keys.chain(spelled), value, ws), { maxLength: 4 }).chain((list) =>
    fc.nat({ max: 20 }).map((dup) => {
      const all = dup < list.length ? [...list, list[dup]!] : list
      return `{${all.map(([k, v, w]) => `${w}"${k}"${w}:${w}${v}`).join(',')}}`
    }),
  )
}

/** An object with some of the declared fields (and an unknown one at times), spelled and valued as generated. */
function objectText(props: Map<string, Schema>, depth: number, required: readonly string[] = []): fc.Arbitrary<string> {
  const names = [...props.keys()]
  if (names.length === 0) return fc.constant('{}')
  const optional = names.filter((n) => !required.includes(n))
  return fc
    .subarray(optional, { minLength: 0 })
    .chain((chosen) => fc.shuffledSubarray([...required, ...chosen], { minLength: required.length + chosen.length }))
    .chain((chosen) =>
      fc.tuple(
        fc.tuple(...chosen.map((name) => fc.tuple(spelled(name), valueText(props.get(name)!, depth, name), ws))),
        rarely(fc.tuple(fc.constantFrom('extra', 'EMAIL', 'emaıl', 'ｅmail'), stringText), 8),
        fc.nat({ max: chosen.length * 6 + 10 }),
        rarely(valueText(props.get(chosen[0] ?? '') ?? {}, depth), 3),
      ),
    )
    .map(([list, extra, dupAt, dupValue]) => {
      const all: [string, string, string][] = [...list]
      if (extra) all.push([extra[0], `"${extra[1]}"`, ''])
      if (dupAt < all.length) {
        const [k, v, w] = all[dupAt]!
        all.push([k, dupValue ?? v, w])
      }
      return `{${all.map(([k, v, w]) => `${w}"${k}"${w}:${w}${v}`).join(',')}${props.size > 0 ? '' : ''}}`
    })
}

/** The body's bytes: the text's private-use stand-ins swapped for bytes that are not UTF-8. */
export function encoded(text: string): Buffer {
  const parts: Buffer[] = []
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const bytes = BAD_BYTES[text[i]!]
    if (bytes === undefined) continue
    parts.push(Buffer.from(text.slice(from, i)), Buffer.from(bytes))
    from = i + 1
  }
  parts.push(Buffer.from(text.slice(from)))
  return Buffer.concat(parts)
}

/** One query component, encoded as a client might (or might not). */
const component = (plain: fc.Arbitrary<string>) =>
  plain.chain((s) =>
    fc.constantFrom(
      s,
      encodeURIComponent(s),
      s.replaceAll(' ', '+'),
      s.replaceAll(' ', '%20'),
      s + '%zz',
      s + '%',
      s + '%e9',
      s + '%ff',
      s.replace(/./, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`),
    ),
  )

const queryName = fc.constantFrom(
  'grant_type',
  'grant_type',
  'redirect_to',
  'code_challenge',
  'provider',
  'x',
  '',
  'GRANT_TYPE',
  'grant%5Ftype',
  'client_id',
  'code_verifier',
  'email',
)
const queryValue = fc.constantFrom(
  'password',
  'refresh_token',
  'pkce',
  'id_token',
  'web3',
  'x',
  '',
  'a b',
  'constructor',
)

/** A query string (without `?`): pairs with repeats, `;`, bad escapes, empty names. */
export const queryText: fc.Arbitrary<string> = fc
  .array(
    fc.tuple(
      component(queryName),
      fc.option(component(queryValue), { freq: 8 }),
      fc.constantFrom('&', '&', '&', ';', '&&'),
    ),
    { maxLength: 5 },
  )
  // A space cannot stand in a request line (Go's server and Node's both refuse it): sent as `+`.
  .map((pairs) =>
    pairs
      .map(([k, v, sep], i) => (i === 0 ? '' : sep) + (v === null ? k : `${k}=${v}`))
      .join('')
      .replaceAll(' ', '+'),
  )

/** A form body from the route's fields: pairs as in a query. */
function formText(props: Map<string, Schema>): fc.Arbitrary<string> {
  const names = [...props.keys()]
  const grant = fc.constantFrom('grant_type=authorization_code&', 'grant_type=refresh_token&', '')
  return fc
    .tuple(
      grant,
      fc.array(
        fc.tuple(
          component(fc.oneof(fc.constantFrom(...names), fc.constantFrom(...names).chain(spelled))),
          component(
            fc.oneof(
              queryValue,
              stringText.filter((s) => !s.includes('\\') && !/[\uE000\uE001]/.test(s)),
            ),
          ),
          fc.constantFrom('&', '&', '&', ';'),
        ),
        { maxLength: 6 },
      ),
    )
    .map(([first, pairs]) => first + pairs.map(([k, v, sep], i) => (i === 0 ? '' : sep) + `${k}=${v}`).join(''))
}

const basicPart = fc.constantFrom('client', 'a%3Ab', 'a%2Db', 'a+b', 'a%20b', '%zz', '%ff', 'a:b', 'é', '', 's3cret')
const basicHeader: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom('Basic ', 'basic ', 'BASIC ', 'Basic  '), basicPart, basicPart)
  .map(([scheme, user, pass]) => scheme + Buffer.from(`${user}:${pass}`).toString('base64'))

const jsonType = fc.constantFrom(
  'application/json',
  'application/json',
  'application/json',
  'application/json',
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON',
  'application/vnd.api+json',
  'application/json;',
  'application/json',
  'application/json',
  'application/json',
  'text/plain',
)
const formType = fc.constantFrom(
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=UTF-8',
  'application/x-www-form-urlencoded;',
  'APPLICATION/X-WWW-FORM-URLENCODED',
  'application/x-www-form-urlencoded ; a="b"',
)

/** The fields a body must hold: the schema's `required`, or its first union member's. */
function requiredOf(schema: Schema): string[] {
  if (Array.isArray(schema.required)) return schema.required as string[]
  const union = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined
  const first = Array.isArray(union) ? union[0] : undefined
  return isRecord(first) && Array.isArray(first.required) ? (first.required as string[]) : []
}

const PARAMS: Record<string, string> = {
  '{id}': '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71',
  '{factor_id}': '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71',
  '{authorization_id}': 'abc',
}

function routeCase(route: AuthRoute): fc.Arbitrary<Case> {
  const props = properties(route.body as Schema)
  const path = '/auth' + route.path.replace(/\{[a-z_]+\}/g, (p) => PARAMS[p] ?? 'x')
  const json = fc
    .tuple(
      objectText(props, 0, requiredOf(route.body as Schema)),
      rarely(fc.constantFrom('\uFEFF', ' \n', '\t', 'null', '[', '"x"'), 30),
      rarely(fc.constantFrom(' ', '\n', 'x', ',', '}'), 30),
      jsonType,
    )
    .map(([text, before, after, type]) => {
      const whole = before === 'null' || before === '"x"' ? before : (before ?? '') + text + (after ?? '')
      return { body: encoded(whole), type }
    })
  const body =
    route.form === true
      ? fc.oneof(
          json,
          fc.tuple(formText(props), formType).map(([text, type]) => ({ body: Buffer.from(text), type })),
        )
      : json
  const grant = route.decodedByQuery
    ? fc.constantFrom('grant_type=password', 'grant_type=refresh_token', 'grant_type=pkce', 'grant_type=id_token', '')
    : fc.constant('')
  return fc
    .tuple(grant, queryText, body, route.form === true ? fc.option(basicHeader, { freq: 2 }) : fc.constant(null))
    .map(([g, q, { body, type }, basic]) => {
      const query = [g, q].filter((x) => x !== '').join('&')
      const headers: [string, string][] = [['Content-Type', type]]
      if (basic !== null) headers.push(['Authorization', basic])
      if (route.bearer) headers.push(['Authorization', 'Bearer a.b.c'])
      return {
        route: routeName(route),
        request: { method: route.method, target: query === '' ? path : `${path}?${query}`, headers, body },
      }
    })
}

/** A generated request on any route with a body. */
export const anyCase: fc.Arbitrary<Case> = fc.oneof(...BODY_ROUTES.map(routeCase))

/** A case as stored in the regression file: the body as base64. */
export interface StoredCase {
  why: string
  route: string
  method: string
  target: string
  headers: [string, string][]
  body: string
}

export function stored(c: Case, why: string): StoredCase {
  return { why, route: c.route, ...c.request, body: c.request.body.toString('base64') }
}

export function restored(s: StoredCase): Case {
  return {
    route: s.route,
    request: { method: s.method, target: s.target, headers: s.headers, body: Buffer.from(s.body, 'base64') },
  }
}
