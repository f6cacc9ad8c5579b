import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadCoreConfig, resolveConfig } from '../../src/config.ts'
import { timeoutOptions } from '../../src/http/timeouts.ts'

describe('AUTHGATE_SOCKET_TIMEOUT', () => {
  it('follows the backend timeout (+ 15 s) unless given; 0 turns it off', () => {
    assert.equal(resolveConfig({}).socketTimeoutMs, 30_000)
    assert.equal(resolveConfig({ backendTimeoutMs: 60_000 }).socketTimeoutMs, 75_000)
    assert.equal(loadCoreConfig({ AUTHGATE_SOCKET_TIMEOUT: '45s' }).socketTimeoutMs, 45_000)
    assert.equal(loadCoreConfig({ AUTHGATE_SOCKET_TIMEOUT: '0' }).socketTimeoutMs, 0)
  })

  it('must be longer than the backend timeout: the client is silent while the backend thinks', () => {
    assert.throws(
      () => loadCoreConfig({ AUTHGATE_SOCKET_TIMEOUT: '10s', AUTHGATE_BACKEND_TIMEOUT: '15s' }),
      /AUTHGATE_SOCKET_TIMEOUT: must be longer than AUTHGATE_BACKEND_TIMEOUT \(15000 ms\), or 0 for none; got 10000 ms/,
    )
    assert.throws(
      () => resolveConfig({ socketTimeoutMs: 15_000 }),
      /socketTimeoutMs: must be longer than backendTimeoutMs/,
    )
  })

  it('is the server’s connection timeout', () => {
    assert.equal(timeoutOptions(resolveConfig({ socketTimeoutMs: 40_000 })).connectionTimeout, 40_000)
    assert.equal(timeoutOptions(resolveConfig({ socketTimeoutMs: 0 })).connectionTimeout, 0)
  })
})
