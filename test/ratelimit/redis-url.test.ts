import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadRateLimitConfig } from '../../src/ratelimit/config.ts'
import { parseRedisUrl } from '../../src/core/redis-url.ts'
import { ROUTES } from './support/app.ts'

describe('AUTHGATE_REDIS_URL deployments', () => {
  it('one server, plain or TLS, passes the URL to ioredis as it is', () => {
    assert.deepEqual(parseRedisUrl('redis://:pw@127.0.0.1:6379/2'), {
      kind: 'single',
      url: 'redis://:pw@127.0.0.1:6379/2',
      tls: false,
    })
    assert.deepEqual(parseRedisUrl('rediss://cache.example.com:6380'), {
      kind: 'single',
      url: 'rediss://cache.example.com:6380',
      tls: true,
    })
  })

  it('Sentinel: the sentinel list, the master name, Redis credentials, an optional db, TLS', () => {
    assert.deepEqual(parseRedisUrl('redis+sentinel://:s%40cret@10.0.0.1:26379,10.0.0.2,[::1]:26380/mymaster'), {
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      name: 'mymaster',
      db: 0,
      tls: false,
      password: 's@cret',
    })
    const tls = parseRedisUrl('rediss+sentinel://app:pw@s1:26379/main/3')
    assert.equal(tls.kind, 'sentinel')
    assert.ok(tls.kind === 'sentinel' && tls.tls && tls.db === 3 && tls.username === 'app' && tls.password === 'pw')
    assert.throws(() => parseRedisUrl('redis+sentinel://s1:26379'), /master name/)
    assert.throws(() => parseRedisUrl('redis+sentinel://s1:26379/m/x'), /master name>\/<db number>/)
  })

  it('Cluster: a node list, default port 6379, no path', () => {
    assert.deepEqual(parseRedisUrl('rediss+cluster://n1,n2:7001'), {
      kind: 'cluster',
      nodes: [
        { host: 'n1', port: 6379 },
        { host: 'n2', port: 7001 },
      ],
      tls: true,
    })
    assert.throws(() => parseRedisUrl('redis+cluster://n1:6379/0'), /no path/)
    assert.throws(() => parseRedisUrl('redis+cluster://n1:99999'), /port out of range/)
  })

  it('a bad URL is a configuration error that never repeats the password', () => {
    for (const url of ['http://:hunter2@h:1', 'redis+sentinel://:hunter2@h:1', 'redis+cluster://:hunter2@h:1,/x']) {
      assert.throws(
        () => loadRateLimitConfig({ AUTHGATE_REDIS_URL: url }, ROUTES),
        (err: Error) => err.message.startsWith('AUTHGATE_REDIS_URL') && !err.message.includes('hunter2'),
        url,
      )
    }
    const c = loadRateLimitConfig(
      { AUTHGATE_REDIS_URL: 'redis+sentinel://s1/m', AUTHGATE_REDIS_SENTINEL_PASSWORD: 'sp' },
      ROUTES,
    )
    assert.equal(c.redis?.sentinelPassword, 'sp')
  })
})
