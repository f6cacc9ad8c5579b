import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadClientMetadataConfig, resolveClientMetadataConfig } from '../../../src/auth/client-metadata/config.ts'
import { parseConsentPagePath } from '../../../src/auth/consent-page/index.ts'
import { AuthgateConfigError } from '../../../src/config/env.ts'
import { loadServiceSettings } from '../../../src/settings.ts'

test('AUTHGATE_OAUTH_CLIENT_METADATA: off by default, any, or https origins; the store follows AUTHGATE_REDIS_URL', () => {
  assert.equal(loadClientMetadataConfig({}), undefined)
  assert.equal(loadClientMetadataConfig({ AUTHGATE_OAUTH_CLIENT_METADATA: 'off' }), undefined)
  const any = loadClientMetadataConfig({ AUTHGATE_OAUTH_CLIENT_METADATA: 'any' })!
  assert.equal(any.origins, 'any')
  assert.deepEqual(any.store, { kind: 'memory' })
  assert.equal(any.maxBytes, 5120)
  assert.equal(any.timeoutMs, 5000)
  const listed = loadClientMetadataConfig({
    AUTHGATE_OAUTH_CLIENT_METADATA: 'https://a.example, https://b.example:8443',
    AUTHGATE_REDIS_URL: 'redis://127.0.0.1:6379',
  })!
  assert.deepEqual(listed.origins, ['https://a.example', 'https://b.example:8443'])
  assert.equal(listed.store.kind, 'redis')
  assert.throws(
    () => loadClientMetadataConfig({ AUTHGATE_OAUTH_CLIENT_METADATA: 'http://a.example' }),
    (e: Error) => e instanceof AuthgateConfigError && /https only/.test(e.message),
  )
})

test('the two test escapes: private origins and a CA file, read at start-up', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authgate-cimd-config-'))
  try {
    writeFileSync(join(dir, 'ca.pem'), 'PEM')
    const config = loadClientMetadataConfig({
      AUTHGATE_OAUTH_CLIENT_METADATA: 'any',
      AUTHGATE_OAUTH_CLIENT_METADATA_PRIVATE_ORIGINS: 'https://localhost:8443',
      AUTHGATE_OAUTH_CLIENT_METADATA_CA: join(dir, 'ca.pem'),
    })!
    assert.deepEqual(config.privateOrigins, ['https://localhost:8443'])
    assert.equal(config.ca, 'PEM')
    assert.throws(
      () =>
        loadClientMetadataConfig({
          AUTHGATE_OAUTH_CLIENT_METADATA: 'any',
          AUTHGATE_OAUTH_CLIENT_METADATA_CA: join(dir, 'missing.pem'),
        }),
      /AUTHGATE_OAUTH_CLIENT_METADATA_CA/,
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('several workers need Redis for the mapping', () => {
  assert.throws(
    () => loadServiceSettings({ AUTHGATE_OAUTH_CLIENT_METADATA: 'any', AUTHGATE_WORKERS: '2' }),
    /AUTHGATE_REDIS_URL/,
  )
  const settings = loadServiceSettings({
    AUTHGATE_OAUTH_CLIENT_METADATA: 'any',
    AUTHGATE_OAUTH_CONSENT_PAGE: '/oauth/consent',
  })
  assert.equal(settings.clientMetadata?.origins, 'any')
  assert.equal(settings.consentPagePath, '/oauth/consent')
})

test('AUTHGATE_OAUTH_CONSENT_PAGE: off or a path', () => {
  assert.equal(parseConsentPagePath('X', 'off'), undefined)
  assert.equal(parseConsentPagePath('X', '/oauth/consent'), '/oauth/consent')
  for (const bad of ['oauth/consent', '//evil.example/x', '/a/../b', 'https://x/y'])
    assert.throws(() => parseConsentPagePath('X', bad), AuthgateConfigError, bad)
})

test('options from code: checked by the value types the variables are read with, unknown ones refused', () => {
  const refused: Array<[object, string, RegExp]> = [
    [{ origins: ['http://a.example'] }, 'clientMetadata.origins', /https only/],
    [{ origins: 'https://a.example' }, 'clientMetadata.origins', /array of strings/],
    [{ origins: 'any', maxBytes: 0 }, 'clientMetadata.maxBytes', /between 1/],
    [{ origins: 'any', timeoutMs: '5s' }, 'clientMetadata.timeoutMs', /milliseconds/],
    [
      { origins: 'any', privateOrigin: [] },
      'clientMetadata.privateOrigin',
      /did you mean clientMetadata\.privateOrigins/,
    ],
  ]
  for (const [options, name, message] of refused)
    assert.throws(
      () => resolveClientMetadataConfig(options as never),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === name && message.test(err.message),
      JSON.stringify(options),
    )
  assert.deepEqual(
    loadClientMetadataConfig({
      AUTHGATE_OAUTH_CLIENT_METADATA: 'any',
      AUTHGATE_OAUTH_CLIENT_METADATA_PRIVATE_ORIGINS: 'none',
    })!.privateOrigins,
    [],
  )
})
