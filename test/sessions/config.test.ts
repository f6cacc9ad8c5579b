import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { AuthgateConfigError } from '../../src/config/env.ts'
import { loadSessionConfig, resolveSessionConfig } from '../../src/sessions/config.ts'
import { loadServiceSettings } from '../../src/settings.ts'

const KEYS = `k1:${randomBytes(32).toString('base64')}`
const named = (option: string) => (err: unknown) => err instanceof AuthgateConfigError && err.option === option

describe('cookie-session settings', () => {
  it('off by default', () => {
    assert.equal(loadSessionConfig({}), undefined)
    assert.equal(loadSessionConfig({ AUTHGATE_SESSIONS: 'off' }), undefined)
  })

  it('on: the documented defaults', () => {
    const config = loadSessionConfig({ AUTHGATE_SESSIONS: 'on', AUTHGATE_SESSION_KEYS: KEYS })!
    assert.equal(config.mode, 'on')
    assert.equal(config.cookieName, '__Host-authgate-session')
    assert.equal(config.secure, true)
    assert.equal(config.lifetimeMs, 168 * 3600_000)
    assert.equal(config.idleTimeoutMs, 24 * 3600_000)
    assert.deepEqual(config.allowedOrigins, [])
    assert.deepEqual(config.store, { kind: 'memory', maxEntries: 100_000 })
    assert.equal(config.revalidateMs, 60_000)
    assert.equal(config.oauthConsentMs, undefined)
    assert.deepEqual(
      config.keys.map((k) => k.id),
      ['k1'],
    )
  })

  it('allowed origins: the CORS origins unless given (never `*`)', () => {
    const env = { AUTHGATE_SESSIONS: 'request', AUTHGATE_SESSION_KEYS: KEYS }
    assert.deepEqual(loadSessionConfig(env, ['https://app.example.com'])!.allowedOrigins, ['https://app.example.com'])
    assert.deepEqual(loadSessionConfig(env, ['*'])!.allowedOrigins, [])
    assert.deepEqual(
      loadSessionConfig({ ...env, AUTHGATE_SESSION_ORIGINS: 'https://a.example.com' }, ['https://b.example.com'])!
        .allowedOrigins,
      ['https://a.example.com'],
    )
    assert.throws(
      () => loadSessionConfig({ ...env, AUTHGATE_SESSION_ORIGINS: 'nope' }),
      named('AUTHGATE_SESSION_ORIGINS'),
    )
  })

  it('the Redis store: AUTHGATE_REDIS_URL, its own key prefix and timeout', () => {
    const config = loadSessionConfig({
      AUTHGATE_SESSIONS: 'on',
      AUTHGATE_SESSION_KEYS: KEYS,
      AUTHGATE_SESSION_STORE: 'redis',
      AUTHGATE_REDIS_URL: 'redis://:pw@127.0.0.1:6379',
      AUTHGATE_REDIS_SENTINEL_PASSWORD: 'sp',
    })!
    assert.deepEqual(config.store, {
      kind: 'redis',
      url: 'redis://:pw@127.0.0.1:6379',
      sentinelPassword: 'sp',
      keyPrefix: 'authgate:session:',
      timeoutMs: 500,
    })
  })

  it('refuses what cannot work, naming the variable', () => {
    const on = { AUTHGATE_SESSIONS: 'on', AUTHGATE_SESSION_KEYS: KEYS }
    assert.throws(() => loadSessionConfig({ AUTHGATE_SESSIONS: 'yes' }), named('AUTHGATE_SESSIONS'))
    assert.throws(() => loadSessionConfig({ AUTHGATE_SESSIONS: 'on' }), named('AUTHGATE_SESSION_KEYS'))
    assert.throws(() => loadSessionConfig({ ...on, AUTHGATE_SESSION_STORE: 'disk' }), named('AUTHGATE_SESSION_STORE'))
    assert.throws(() => loadSessionConfig({ ...on, AUTHGATE_SESSION_STORE: 'redis' }), named('AUTHGATE_SESSION_STORE'))
    assert.throws(
      () => loadSessionConfig({ ...on, AUTHGATE_SESSION_STORE: 'redis', AUTHGATE_REDIS_URL: 'http://x:secret@h' }),
      (err: Error) => named('AUTHGATE_REDIS_URL')(err) && !err.message.includes('secret'),
    )
    assert.throws(
      () => loadSessionConfig({ ...on, AUTHGATE_SESSION_COOKIE_SECURE: 'false' }),
      named('AUTHGATE_SESSION_COOKIE_SECURE'),
    )
    assert.throws(
      () => loadSessionConfig({ ...on, AUTHGATE_SESSION_COOKIE_SECURE: 'maybe' }),
      named('AUTHGATE_SESSION_COOKIE_SECURE'),
    )
    assert.throws(
      () => loadSessionConfig({ ...on, AUTHGATE_SESSION_COOKIE_NAME: 'a b' }),
      named('AUTHGATE_SESSION_COOKIE_NAME'),
    )
    assert.throws(
      () => loadSessionConfig({ ...on, AUTHGATE_SESSION_LIFETIME: '30s' }),
      named('AUTHGATE_SESSION_LIFETIME'),
    )
    assert.throws(
      () => loadSessionConfig({ ...on, AUTHGATE_SESSION_IDLE_TIMEOUT: '10s' }),
      named('AUTHGATE_SESSION_IDLE_TIMEOUT'),
    )
  })

  it('plain-http development: another name without Secure', () => {
    const config = loadSessionConfig({
      AUTHGATE_SESSIONS: 'on',
      AUTHGATE_SESSION_KEYS: KEYS,
      AUTHGATE_SESSION_COOKIE_NAME: 'authgate-session',
      AUTHGATE_SESSION_COOKIE_SECURE: 'false',
    })!
    assert.equal(config.secure, false)
  })

  it('several workers need the Redis store', () => {
    const env = { AUTHGATE_SESSIONS: 'on', AUTHGATE_SESSION_KEYS: KEYS, AUTHGATE_WORKERS: '2' }
    assert.throws(() => loadServiceSettings(env), named('AUTHGATE_SESSION_STORE'))
    const ok = loadServiceSettings({ ...env, AUTHGATE_SESSION_STORE: 'redis', AUTHGATE_REDIS_URL: 'redis://127.0.0.1' })
    assert.equal(ok.sessions?.store.kind, 'redis')
    assert.equal(loadServiceSettings({}).sessions, undefined)
  })
})

describe('the plugin option', () => {
  it('takes key strings or keys, with defaults', () => {
    const config = resolveSessionConfig({ keys: [KEYS] })
    assert.equal(config.mode, 'on')
    assert.equal(config.keys[0]!.id, 'k1')
  })

  it('refuses bad keys and `*` origins, naming the option', () => {
    assert.throws(() => resolveSessionConfig({ keys: [] }), named('sessions.keys'))
    assert.throws(() => resolveSessionConfig({ keys: [{ id: 'k', key: Buffer.alloc(16) }] }), named('sessions.keys'))
    const k = { id: 'k', key: randomBytes(32) }
    assert.throws(() => resolveSessionConfig({ keys: [k, k] }), named('sessions.keys'))
    assert.throws(() => resolveSessionConfig({ keys: [k], allowedOrigins: ['*'] }), named('sessions.allowedOrigins'))
    assert.throws(() => resolveSessionConfig({ keys: [k], secure: false }), named('sessions.secure'))
  })

  it('revalidation and the OAuth consent: durations; consent `off` unless given one', () => {
    const env = { AUTHGATE_SESSIONS: 'on', AUTHGATE_SESSION_KEYS: KEYS }
    const config = loadSessionConfig({
      ...env,
      AUTHGATE_SESSION_REVALIDATE: '30s',
      AUTHGATE_SESSION_OAUTH_CONSENT: '5m',
    })!
    assert.equal(config.revalidateMs, 30_000)
    assert.equal(config.oauthConsentMs, 300_000)
    assert.equal(loadSessionConfig({ ...env, AUTHGATE_SESSION_OAUTH_CONSENT: 'OFF' })!.oauthConsentMs, undefined)
    assert.throws(
      () => loadSessionConfig({ ...env, AUTHGATE_SESSION_REVALIDATE: '500ms' }),
      named('AUTHGATE_SESSION_REVALIDATE'),
    )
    assert.throws(
      () => loadSessionConfig({ ...env, AUTHGATE_SESSION_OAUTH_CONSENT: 'on' }),
      named('AUTHGATE_SESSION_OAUTH_CONSENT'),
    )
    assert.throws(() => resolveSessionConfig({ keys: [KEYS], oauthConsentMs: 0 }), named('sessions.oauthConsentMs'))
  })
})
