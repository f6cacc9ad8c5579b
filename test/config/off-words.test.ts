import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { loadCoreConfig } from '../../src/config.ts'
import { FALSE_WORDS, OFF_WORDS, TRUE_WORDS } from '../../src/config/env.ts'
import { loadOpenApiConfig } from '../../src/docs-server/config.ts'
import { loadSessionConfig } from '../../src/sessions/config.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { parseConsentPagePath } from '../../src/auth/consent-page/index.ts'
import { loadClientMetadataConfig } from '../../src/auth/client-metadata/config.ts'

// One vocabulary for "off" and for yes-or-no, in every setting that can be off (docs/decisions.md, D85).
const SPELLINGS = [...OFF_WORDS].flatMap((w) => [w, w.toUpperCase()])

describe('every word for off turns off every setting that can be off', () => {
  for (const off of SPELLINGS) {
    test(JSON.stringify(off), () => {
      const rl = loadRateLimitSettings({
        AUTHGATE_RATE_LIMITED_ROUTES: off,
        AUTHGATE_ACCOUNT_RATE_LIMIT: off,
        AUTHGATE_EMAIL_BUDGET: off,
        AUTHGATE_SMS_BUDGET: off,
      })
      assert.equal(rl.routes.size, 0)
      assert.equal(rl.accounts!.routes.has('POST /token'), false)
      assert.equal(rl.accounts!.routes.has('POST /otp'), true, 'the message rate is its own setting')
      assert.equal(rl.budgets!.email, undefined)
      assert.equal(rl.budgets!.sms, undefined)
      const perRoute = loadRateLimitSettings({
        AUTHGATE_RATE_LIMIT_ROUTES: `POST /token=${off}`,
        AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT: off,
        AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: `POST /signup=${off}`,
        AUTHGATE_ACCOUNT_DEVICE_COOKIE: off,
      })
      assert.equal(perRoute.routes.has('POST /token'), false)
      assert.equal(perRoute.routes.has('POST /signup'), true)
      assert.deepEqual([...perRoute.accounts!.routes.keys()], ['POST /token'])
      assert.equal(perRoute.accounts!.deviceCookie, false)

      const core = loadCoreConfig({
        AUTHGATE_METRICS_PATH: off,
        AUTHGATE_CACHE_TTL: off,
        AUTHGATE_TRACING: off,
        AUTHGATE_CORS_ORIGINS: off,
        AUTHGATE_TRUSTED_PROXIES: off,
        AUTHGATE_DISABLED_GROUPS: off,
        AUTHGATE_SOCKET_TIMEOUT: off,
      })
      assert.equal(core.metricsPath, false)
      assert.equal(core.cacheTtlMs, 0)
      assert.equal(core.tracing, 'off')
      assert.deepEqual([core.corsOrigins, core.trustedProxies, core.disabledGroups], [[], [], []])
      assert.equal(core.socketTimeoutMs, 0)

      assert.equal(loadSessionConfig({ AUTHGATE_SESSIONS: off }), undefined)
      const sessions = loadSessionConfig(
        {
          AUTHGATE_SESSIONS: 'on',
          AUTHGATE_SESSION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
          AUTHGATE_SESSION_ORIGINS: off,
          AUTHGATE_SESSION_OAUTH_CONSENT: off,
        },
        ['https://app.example.com'],
      )!
      assert.deepEqual(sessions.allowedOrigins, [], "no origins besides the request's own, not the CORS list")
      assert.equal(sessions.oauthConsentMs, undefined)
      assert.equal(loadOpenApiConfig({ AUTHGATE_OPENAPI_PATH: off }).enabled, false)
      assert.equal(loadOpenApiConfig({ AUTHGATE_DOCS_PATH: off }).docsPath, false)
      assert.equal(parseConsentPagePath('AUTHGATE_OAUTH_CONSENT_PAGE', off), undefined)
      assert.equal(loadClientMetadataConfig({ AUTHGATE_OAUTH_CLIENT_METADATA: off }), undefined)
    })
  }
})

describe('every yes-or-no setting reads the same words', () => {
  const cases: Array<[string, boolean]> = [
    ...[...TRUE_WORDS].map((w): [string, boolean] => [w, true]),
    ...[...FALSE_WORDS].map((w): [string, boolean] => [w, false]),
  ]
  for (const [word, value] of cases) {
    test(`${word} is ${value}`, () => {
      assert.equal(
        loadCoreConfig({ AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES: word }).readinessFollowsDependencies,
        value,
      )
      assert.equal(loadRateLimitSettings({ AUTHGATE_ACCOUNT_DEVICE_COOKIE: word }).accounts!.deviceCookie, value)
      const sessions = loadSessionConfig({
        AUTHGATE_SESSIONS: 'on',
        AUTHGATE_SESSION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
        AUTHGATE_SESSION_COOKIE_SECURE: word,
        ...(value ? {} : { AUTHGATE_SESSION_COOKIE_NAME: 'sid' }),
      })
      assert.equal(sessions!.secure, value)
    })
  }

  test('a word that is neither is refused, naming the setting', () => {
    assert.throws(
      () => loadRateLimitSettings({ AUTHGATE_ACCOUNT_DEVICE_COOKIE: 'maybe' }),
      /AUTHGATE_ACCOUNT_DEVICE_COOKIE: expected "on" or "off"/,
    )
    assert.throws(
      () => loadCoreConfig({ AUTHGATE_READINESS_FOLLOWS_DEPENDENCIES: 'sometimes' }),
      /expected true or false/,
    )
  })
})
