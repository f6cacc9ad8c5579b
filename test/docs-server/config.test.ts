import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AuthgateConfigError } from '../../src/config.ts'
import { derive30Path, loadOpenApiConfig, resolveOpenApiConfig } from '../../src/docs-server/config.ts'

test('defaults: /openapi.json, /openapi-3.0.json, /docs, enabled', () => {
  assert.deepEqual(loadOpenApiConfig({}), {})
  assert.deepEqual(resolveOpenApiConfig(loadOpenApiConfig({})), {
    enabled: true,
    openapiPath: '/openapi.json',
    openapi30Path: '/openapi-3.0.json',
    docsPath: '/docs',
  })
})

test('the environment sets paths, title and version', () => {
  const env = {
    AUTHGATE_OPENAPI_PATH: '/api/openapi.json',
    AUTHGATE_DOCS_PATH: '/api/reference',
    AUTHGATE_API_TITLE: '  My API ',
    AUTHGATE_API_VERSION: '2.1.0',
  }
  const options = loadOpenApiConfig(env)
  assert.deepEqual(options, {
    openapiPath: '/api/openapi.json',
    docsPath: '/api/reference',
    info: { title: 'My API', version: '2.1.0' },
  })
  assert.deepEqual(resolveOpenApiConfig(options), {
    enabled: true,
    openapiPath: '/api/openapi.json',
    openapi30Path: '/api/openapi-3.0.json',
    docsPath: '/api/reference',
  })
  assert.equal(loadOpenApiConfig({ AUTHGATE_OPENAPI30_PATH: '/v3.json' }).openapi30Path, '/v3.json')
})

test('"off" turns parts off; empty values mean unset', () => {
  assert.equal(loadOpenApiConfig({ AUTHGATE_DOCS_PATH: 'off' }).docsPath, false)
  assert.equal(loadOpenApiConfig({ AUTHGATE_OPENAPI30_PATH: 'false' }).openapi30Path, false)
  assert.equal(loadOpenApiConfig({ AUTHGATE_OPENAPI_PATH: 'off' }).enabled, false)
  assert.deepEqual(loadOpenApiConfig({ AUTHGATE_OPENAPI_PATH: '', AUTHGATE_API_TITLE: '  ' }), {})
})

test('bad values throw AuthgateConfigError naming the variable', () => {
  const bad: Array<[Record<string, string>, string]> = [
    [{ AUTHGATE_OPENAPI_PATH: 'openapi.json' }, 'AUTHGATE_OPENAPI_PATH'],
    [{ AUTHGATE_OPENAPI_PATH: '/openapi.json?x=1' }, 'AUTHGATE_OPENAPI_PATH'],
    [{ AUTHGATE_DOCS_PATH: '/docs/' }, 'AUTHGATE_DOCS_PATH'],
    [{ AUTHGATE_DOCS_PATH: '/a/../docs' }, 'AUTHGATE_DOCS_PATH'],
    [{ AUTHGATE_DOCS_PATH: '/items/:id' }, 'AUTHGATE_DOCS_PATH'],
    [{ AUTHGATE_OPENAPI30_PATH: 'x' }, 'AUTHGATE_OPENAPI30_PATH'],
    [{ AUTHGATE_API_TITLE: 'a\u0007b' }, 'AUTHGATE_API_TITLE'],
    [{ AUTHGATE_API_VERSION: 'x'.repeat(65) }, 'AUTHGATE_API_VERSION'],
    [{ AUTHGATE_DOCS_PATH: '/openapi.json' }, 'AUTHGATE_DOCS_PATH'],
  ]
  for (const [env, variable] of bad) {
    assert.throws(
      () => loadOpenApiConfig(env),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === variable,
      JSON.stringify(env),
    )
  }
})

test('library options are checked the same way', () => {
  assert.throws(() => resolveOpenApiConfig({ docsPath: 'docs' }), AuthgateConfigError)
  assert.throws(() => resolveOpenApiConfig({ openapiPath: '/x', openapi30Path: '/x' }), AuthgateConfigError)
  // The example account as the variable's reader would refuse it, named as the option.
  for (const exampleUser of [{ email: 'dev', password: 'secret' }, { email: 'dev@example.com' }, 'dev@example.com:x'])
    assert.throws(
      () => resolveOpenApiConfig({ exampleUser } as never),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === 'exampleUser',
      JSON.stringify(exampleUser),
    )
  assert.throws(
    () => resolveOpenApiConfig({ docsPath: 7 } as never),
    (err: unknown) =>
      err instanceof AuthgateConfigError && err.option === 'docsPath' && /path or false/.test(err.message),
  )
  assert.deepEqual(resolveOpenApiConfig({ docsPath: false, openapi30Path: false }), {
    enabled: true,
    openapiPath: '/openapi.json',
    openapi30Path: false,
    docsPath: false,
  })
  assert.equal(derive30Path('/spec'), '/spec-3.0')
})
