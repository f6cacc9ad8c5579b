import assert from 'node:assert/strict'
import { test } from 'node:test'
import { settingsHelp } from '../../src/config/schema.ts'
import { loadServiceSettings } from '../../src/settings.ts'
import { loadServicesConfig, resolveServicesConfig, withHostedBackend } from '../../src/services/config.ts'
import { KeyBook, keyInAuthorization, queryKey, withQueryKey } from '../../src/services/keys.ts'
import { SERVICE_TABLE } from '../../src/services/table.ts'
import { ANON, KEYS, PUBLISHABLE, SECRET, SERVICE } from './support.ts'

test('no service setting: nothing beyond Auth is served', () => {
  assert.equal(loadServicesConfig({}), undefined)
  assert.equal(loadServiceSettings({}).services, undefined)
})

test('hosted: one project URL mounts every hosted service at its own path, and Auth at /auth/v1', () => {
  const env = { AUTHGATE_SUPABASE_URL: 'https://abcdefgh.supabase.co/', AUTHGATE_BACKEND_APIKEY: PUBLISHABLE }
  const config = loadServicesConfig(env)!
  assert.deepEqual(
    config.upstreams.map((u) => [u.row.prefix, u.origin + u.basePath, u.selfHosted]),
    [
      ['/rest/v1', 'https://abcdefgh.supabase.co/rest/v1', false],
      ['/graphql/v1', 'https://abcdefgh.supabase.co/graphql/v1', false],
      ['/storage/v1', 'https://abcdefgh.supabase.co/storage/v1', false],
      ['/functions/v1', 'https://abcdefgh.supabase.co/functions/v1', false],
      ['/realtime/v1/api', 'https://abcdefgh.supabase.co/realtime/v1/api', false],
      ['/realtime/v1/websocket', 'https://abcdefgh.supabase.co/realtime/v1/websocket', false],
    ],
  )
  assert.equal(config.defaultKey, PUBLISHABLE)
  assert.equal(config.keys, undefined)
  const settings = loadServiceSettings(env)
  assert.equal(settings.core.backendUrl.href, 'https://abcdefgh.supabase.co/auth/v1')
  // An explicit backend URL wins.
  assert.equal(
    withHostedBackend({ ...env, AUTHGATE_BACKEND_URL: 'http://auth:9999' }).AUTHGATE_BACKEND_URL,
    'http://auth:9999',
  )
})

test('self-hosted: each service its own URL, with the rows’ rewrites; a URL given overrides the hosted one', () => {
  const config = loadServicesConfig({
    AUTHGATE_SUPABASE_URL: 'https://abcdefgh.supabase.co',
    AUTHGATE_REST_URL: 'http://rest:3000',
    AUTHGATE_REALTIME_URL: 'http://realtime-dev.supabase-realtime:4000',
    AUTHGATE_REALTIME_TENANT: 'realtime-dev',
    AUTHGATE_META_URL: 'http://meta:8080',
    AUTHGATE_ANON_KEY: ANON,
    AUTHGATE_SERVICE_ROLE_KEY: SERVICE,
    AUTHGATE_PUBLISHABLE_KEYS: ` ${PUBLISHABLE} ,`,
    AUTHGATE_SECRET_KEYS: SECRET,
  })!
  const by = new Map(config.upstreams.map((u) => [u.row.prefix, u]))
  assert.equal(by.get('/rest/v1')!.origin + by.get('/rest/v1')!.basePath, 'http://rest:3000')
  assert.equal(by.get('/graphql/v1')!.basePath, '/rpc/graphql')
  assert.equal(by.get('/storage/v1')!.origin, 'https://abcdefgh.supabase.co')
  assert.equal(by.get('/realtime/v1/websocket')!.basePath, '/socket/websocket')
  assert.equal(by.get('/realtime/v1/websocket')!.host, 'realtime-dev')
  assert.equal(by.get('/realtime/v1/api')!.basePath, '/api')
  assert.equal(by.get('/pg')!.basePath, '')
  assert.equal(by.get('/functions/v1')!.timeoutMs, 150_000)
  assert.deepEqual(config.keys, { anon: ANON, service: SERVICE, publishable: [PUBLISHABLE], secret: [SECRET] })
})

test('bad settings stop the service with the setting named', () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ AUTHGATE_REST_URL: 'ftp://rest' }, /AUTHGATE_REST_URL: must be an http or https URL/],
    [{ AUTHGATE_SUPABASE_URL: 'https://x.supabase.co/rest/v1' }, /AUTHGATE_SUPABASE_URL: the project URL has no path/],
    [{ AUTHGATE_META_URL: 'http://meta:8080' }, /AUTHGATE_META_URL: pg-meta is served to the service-role key only/],
    [
      { AUTHGATE_REST_URL: 'http://rest:3000', AUTHGATE_PUBLISHABLE_KEYS: PUBLISHABLE },
      /AUTHGATE_PUBLISHABLE_KEYS: publishable keys are translated to AUTHGATE_ANON_KEY/,
    ],
    [
      { AUTHGATE_REST_URL: 'http://rest:3000', AUTHGATE_SECRET_KEYS: SECRET },
      /AUTHGATE_SECRET_KEYS: secret keys are translated to AUTHGATE_SERVICE_ROLE_KEY/,
    ],
    [
      { AUTHGATE_REST_URL: 'http://rest:3000', AUTHGATE_ANON_KEY: ANON, AUTHGATE_PUBLISHABLE_KEYS: 'pk_live' },
      /AUTHGATE_PUBLISHABLE_KEYS: each key starts with sb_publishable_/,
    ],
    [
      { AUTHGATE_REST_URL: 'http://rest:3000', AUTHGATE_SERVICE_ROLE_KEY: SERVICE, AUTHGATE_SECRET_KEYS: 'x' },
      /AUTHGATE_SECRET_KEYS: each key starts with sb_secret_/,
    ],
    [
      { AUTHGATE_REST_URL: 'http://rest:3000', AUTHGATE_ANON_KEY: ANON, AUTHGATE_SERVICE_ROLE_KEY: ANON },
      /AUTHGATE_SERVICE_ROLE_KEY: is the same key as AUTHGATE_ANON_KEY/,
    ],
    [
      { AUTHGATE_REALTIME_URL: 'http://realtime:4000', AUTHGATE_REALTIME_TENANT: 'a b' },
      /AUTHGATE_REALTIME_TENANT: not a host name/,
    ],
  ]
  for (const [env, message] of cases) {
    assert.throws(() => loadServicesConfig(env), message, JSON.stringify(env))
  }
  assert.throws(
    () => resolveServicesConfig({ urls: { nope: 'http://x' } as never }),
    /services.urls.nope: not a service/,
  )
})

test('the key book: legacy keys stand for themselves, new keys for theirs, rules by service', () => {
  const book = new KeyBook({ ...KEYS })
  assert.deepEqual(book.judge(PUBLISHABLE, 'required'), { ok: true, key: ANON, level: 'anon' })
  assert.deepEqual(book.judge(SECRET, 'service'), { ok: true, key: SERVICE, level: 'service' })
  assert.deepEqual(book.judge(ANON, 'required'), { ok: true, key: ANON, level: 'anon' })
  assert.deepEqual(book.judge(ANON, 'service'), { ok: false, code: 'service_key_required' })
  assert.deepEqual(book.judge(undefined, 'required'), { ok: false, code: 'no_api_key' })
  assert.deepEqual(book.judge('', 'service'), { ok: false, code: 'no_api_key' })
  assert.deepEqual(book.judge(undefined, 'optional'), { ok: true, key: undefined, level: undefined })
  assert.deepEqual(book.judge('x', 'optional'), { ok: false, code: 'invalid_api_key' })
  // Without keys configured, the upstreams judge.
  assert.deepEqual(new KeyBook(undefined).judge('anything', 'required'), {
    ok: true,
    key: 'anything',
    level: 'unchecked',
  })
  // The last unchecked key's verdict and Bearer header are kept: another key gets its own.
  const open = new KeyBook(undefined)
  for (const key of ['a', 'a', 'b', 'a']) {
    assert.deepEqual(open.judge(key, 'required'), { ok: true, key, level: 'unchecked' })
    assert.equal(open.bearer(key), `Bearer ${key}`)
  }
  assert.equal(book.bearer(ANON), `Bearer ${ANON}`)
  assert.equal(book.bearer('other'), 'Bearer other')
})

test('keys in Authorization and the query', () => {
  assert.equal(keyInAuthorization(`Bearer ${PUBLISHABLE}`), PUBLISHABLE)
  assert.equal(keyInAuthorization(`bearer   ${SECRET} `), SECRET)
  assert.equal(keyInAuthorization('Bearer eyJ.user.jwt'), undefined)
  assert.equal(keyInAuthorization('AWS4-HMAC-SHA256 Credential=sb_x'), undefined)
  assert.equal(keyInAuthorization(undefined), undefined)
  assert.equal(queryKey('vsn=1.0.0&apikey=sb_publishable_a%2Bb&apikey=second'), 'sb_publishable_a+b')
  assert.equal(queryKey('apikey=%E0%A4%A'), '%E0%A4%A')
  assert.equal(queryKey('vsn=1&apikeys=x&flag'), undefined)
  assert.equal(withQueryKey('vsn=1.0.0&apikey=old&x=%20&flag', 'a.b+c'), 'vsn=1.0.0&apikey=a.b%2Bc&x=%20&flag')
})

test('the table: one row per service path, each with its key rule, and every setting documented in --help', () => {
  const prefixes = SERVICE_TABLE.map((r) => r.prefix)
  assert.equal(new Set(prefixes).size, prefixes.length)
  const help = settingsHelp()
  for (const name of new Set(SERVICE_TABLE.map((r) => r.setting))) assert.match(help, new RegExp(name))
  for (const name of ['AUTHGATE_SUPABASE_URL', 'AUTHGATE_ANON_KEY', 'AUTHGATE_SECRET_KEYS', 'AUTHGATE_REALTIME_TENANT'])
    assert.match(help, new RegExp(name))
})

test('options from code are checked by the value types their variables are read with, named as given', () => {
  const rest = { urls: { rest: 'http://127.0.0.1:3000' } }
  const refused: Array<[object, string]> = [
    [{ connections: 0 }, 'services.connections'],
    [{ connectTimeoutMs: -5 }, 'services.connectTimeoutMs'],
    [{ timeoutsMs: { rest: '30s' } }, 'services.timeoutsMs.rest'],
    [{ restDocumentRefreshMs: 'off' }, 'services.restDocumentRefreshMs'],
    [{ defaultKey: '' }, 'services.defaultKey'],
    [{ keys: { publishable: 'sb_publishable_x' } }, 'services.keys.publishable'],
  ]
  for (const [options, name] of refused)
    assert.throws(
      () => resolveServicesConfig({ ...rest, ...options } as never),
      (err: unknown) => err instanceof Error && 'option' in err && err.option === name,
      JSON.stringify(options),
    )
  assert.equal(resolveServicesConfig({ ...rest, restDocumentRefreshMs: false }).restDocumentRefreshMs, false)
  // Every word for off turns the refresh off (docs/decisions.md, D85), not only `off`.
  for (const off of ['off', 'none', 'NO', 'disabled'])
    assert.equal(
      loadServicesConfig({ AUTHGATE_REST_URL: 'http://127.0.0.1:3000', AUTHGATE_REST_DOCUMENT_REFRESH: off })!
        .restDocumentRefreshMs,
      false,
      off,
    )
})

test("Storage's answers are made inert unless AUTHGATE_STORAGE_SANDBOX is off; no other service's are", () => {
  const urls = { AUTHGATE_STORAGE_URL: 'http://storage:5000', AUTHGATE_REST_URL: 'http://rest:3000' }
  const inert = (env: Record<string, string>) =>
    Object.fromEntries(loadServicesConfig(env)!.upstreams.map((u) => [u.label, u.inert]))
  assert.deepEqual(inert(urls), { rest: false, graphql: false, storage: true })
  assert.deepEqual(inert({ ...urls, AUTHGATE_STORAGE_SANDBOX: 'off' }), { rest: false, graphql: false, storage: false })
  assert.deepEqual(inert({ ...urls, AUTHGATE_STORAGE_SANDBOX: 'on' }).storage, true)
  assert.throws(() => loadServicesConfig({ ...urls, AUTHGATE_STORAGE_SANDBOX: 'maybe' }), /AUTHGATE_STORAGE_SANDBOX/)
  assert.throws(() => resolveServicesConfig({ storageSandbox: 'no' as never }), /services\.storageSandbox/)
})
