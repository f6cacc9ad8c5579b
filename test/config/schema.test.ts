import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { AuthgateConfigError, loadCoreConfig } from '../../src/config.ts'
import { SETTINGS, closestSetting, settingValue, unknownVariables } from '../../src/config/schema.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { LIMITABLE_ROUTES } from '../../src/auth/routes/index.ts'
import { resolveOpenApiConfig } from '../../src/docs-server/index.ts'
import { DEFAULT_TITLE, DEFAULT_VERSION } from '../../src/openapi/index.ts'
import { withTable } from '../../scripts/settings-table.ts'

const ROOT = new URL('../../', import.meta.url)

test("the README's configuration table is the one generated from the schema", () => {
  const readme = readFileSync(new URL('README.md', ROOT), 'utf8')
  assert.equal(readme, withTable(readme), 'README.md is out of date: run npm run docs:settings')
  for (const s of SETTINGS) assert.ok(readme.includes(`| \`${s.name}\` |`), s.name)
})

test('--help prints every setting with its default', () => {
  const out = spawnSync(process.execPath, ['src/main.ts', '--help'], { cwd: ROOT, encoding: 'utf8' })
  assert.equal(out.status, 0)
  for (const s of SETTINGS) {
    const line = out.stdout.split('\n').find((l) => l.trim().startsWith(s.name + ' '))
    assert.ok(line, `${s.name} missing from --help`)
    const shown = (s.defaultText ?? s.default ?? 'none').replaceAll('`', '')
    assert.ok(line.includes(`default: ${shown}`), `${s.name}: ${line}`)
  }
})

test('schema defaults are the defaults the readers use', () => {
  const core = loadCoreConfig({})
  assert.equal(core.port, Number(settingValue({}, 'PORT')))
  assert.equal(core.backendTimeoutMs, 15_000)
  assert.equal(core.shutdownTimeoutMs, 20_000, 'default shutdown deadline is above the backend timeout')
  assert.equal(core.headerTimeoutMs, 10_000)
  assert.equal(core.requestTimeoutMs, 30_000)
  assert.equal(core.maxHeaderSize, 16 * 1024)
  assert.equal(core.requestIdHeader, 'x-request-id')
  assert.equal(core.metricsPath, '/metrics')
  assert.deepEqual(core.corsOrigins, [])
  const rl = loadRateLimitSettings({})
  assert.equal(rl.ipv6PrefixLength, Number(settingValue({}, 'AUTHGATE_RATE_LIMIT_IPV6_PREFIX')))
  assert.equal(rl.memoryMaxKeys, Number(settingValue({}, 'AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS')))
  assert.equal(rl.onRedisError, settingValue({}, 'AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR'))
  const docs = resolveOpenApiConfig({})
  assert.equal(docs.openapiPath, settingValue({}, 'AUTHGATE_OPENAPI_PATH'))
  assert.equal(docs.docsPath, settingValue({}, 'AUTHGATE_DOCS_PATH'))
  assert.equal(DEFAULT_TITLE, settingValue({}, 'AUTHGATE_API_TITLE'))
  assert.equal(DEFAULT_VERSION, settingValue({}, 'AUTHGATE_API_VERSION'))
})

test('an unknown AUTHGATE_ variable is an error naming the closest known one', () => {
  assert.equal(closestSetting('AUTHGATE_BACKEND_ULR'), 'AUTHGATE_BACKEND_URL')
  assert.equal(closestSetting('AUTHGATE_RATELIMIT'), 'AUTHGATE_RATE_LIMIT')
  assert.equal(closestSetting('AUTHGATE_CORS_ORIGIN'), 'AUTHGATE_CORS_ORIGINS')
  assert.throws(
    () => loadCoreConfig({ AUTHGATE_BACKEND_ULR: 'http://x' }),
    (err: unknown) =>
      err instanceof AuthgateConfigError &&
      err.option === 'AUTHGATE_BACKEND_ULR' &&
      err.message.includes('did you mean AUTHGATE_BACKEND_URL?'),
  )
  // Variables of this repository's own tools, and others' variables, are not settings.
  assert.deepEqual(unknownVariables({ AUTHGATE_SUPABASE_AUTH_BIN: '/x', HOME: '/root', PGHOST: 'x' }), [])
  // Library users reading only the core part can opt out.
  assert.equal(loadCoreConfig({ AUTHGATE_OTHER: '1' }, { strict: false }).port, 8080)
})

test('the service refuses to start with a misspelled variable', () => {
  const out = spawnSync(process.execPath, ['src/main.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', AUTHGATE_BACKEND_ULR: 'http://127.0.0.1:1', PORT: '0' },
    timeout: 20_000,
  })
  assert.equal(out.status, 2)
  assert.match(out.stderr, /AUTHGATE_BACKEND_ULR: unknown variable; did you mean AUTHGATE_BACKEND_URL\?/)
})

test('durations need a unit', () => {
  for (const name of ['AUTHGATE_BACKEND_TIMEOUT', 'AUTHGATE_HEADER_TIMEOUT', 'AUTHGATE_SHUTDOWN_TIMEOUT']) {
    assert.throws(
      () => loadCoreConfig({ [name]: '10' }),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === name && /needs a unit/.test(err.message),
    )
  }
  assert.throws(
    () => loadRateLimitSettings({ AUTHGATE_REDIS_TIMEOUT: '100', AUTHGATE_REDIS_URL: 'redis://x' }),
    /needs a unit/,
  )
  assert.equal(loadCoreConfig({ AUTHGATE_BACKEND_TIMEOUT: '10s' }).backendTimeoutMs, 10_000)
  assert.equal(loadCoreConfig({ AUTHGATE_BACKEND_TIMEOUT: '10s' }).shutdownTimeoutMs, 15_000)
  assert.equal(loadCoreConfig({ AUTHGATE_SHUTDOWN_DELAY: '0s' }).shutdownDelayMs, 0)
})

test('new settings are parsed and checked', () => {
  const c = loadCoreConfig({
    AUTHGATE_CORS_ORIGINS: 'https://app.example.com, http://localhost:3000',
    AUTHGATE_BACKEND_APIKEY: 'sb_publishable_abc',
    AUTHGATE_METRICS_PORT: '9100',
    AUTHGATE_LIVENESS_PATH: 'off',
    AUTHGATE_REQUEST_ID_HEADER: 'X-Correlation-Id',
  })
  assert.deepEqual(c.corsOrigins, ['https://app.example.com', 'http://localhost:3000'])
  assert.equal(c.backendApiKey, 'sb_publishable_abc')
  assert.equal(c.metricsPort, 9100)
  assert.equal(c.livenessPath, false)
  assert.equal(c.requestIdHeader, 'x-correlation-id')
  assert.deepEqual(loadCoreConfig({ AUTHGATE_CORS_ORIGINS: '*' }).corsOrigins, ['*'])
  const bad: Array<[string, string]> = [
    ['AUTHGATE_CORS_ORIGINS', 'https://app.example.com/path'],
    ['AUTHGATE_CORS_ORIGINS', '*, https://a.example'],
    ['AUTHGATE_CORS_ORIGINS', 'app.example.com'],
    ['AUTHGATE_REQUEST_TIMEOUT', '1s'],
    ['AUTHGATE_READINESS_PATH', '/livez'],
    ['AUTHGATE_REQUEST_ID_HEADER', 'x id'],
    ['AUTHGATE_MAX_HEADER_SIZE', 'huge'],
  ]
  for (const [name, value] of bad) {
    assert.throws(
      () => loadCoreConfig({ [name]: value }),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === name,
      `${name}=${value}`,
    )
  }
})

test('--help names as per-account exactly the routes the route table gives an account, by rate', () => {
  // `POST /otp`, `/magiclink` → POST /otp, POST /magiclink: the routes a meaning lists.
  const named = (variable: string) => {
    const meaning = SETTINGS.find((s) => s.name === variable)!.meaning
    let method = ''
    return [...meaning.matchAll(/`(?:(GET|POST|PUT) )?(\/[a-z/]+)`/g)].map(([, m, path]) => {
      method = m ?? method
      return `${method} ${path}`
    })
  }
  const accountRoutes = (kind?: string) =>
    LIMITABLE_ROUTES.filter((r) => r.account !== undefined && (kind === undefined || r.account === kind))
      .map((r) => r.key)
      .sort()
  assert.deepEqual(named('AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES').sort(), accountRoutes())
  assert.deepEqual(named('AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT').sort(), accountRoutes('message'))
  // Every route it names is accepted there.
  for (const route of accountRoutes())
    assert.doesNotThrow(() => loadRateLimitSettings({ AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: `${route}=off` }))
})
