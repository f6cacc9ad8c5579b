/**
 * Rate limiting against a real TLS Redis: a redis-server of our own listening only on a TLS port,
 * its certificate signed by a throwaway CA made with the openssl CLI for this run. With that CA in
 * AUTHGATE_REDIS_TLS_CA a `rediss://` URL limits as a plain one does; with another CA the connection
 * is refused, the log says which setting to check, and the failure policy answers.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { AuthgateConfigError } from '../../src/config/env.ts'
import { loadRateLimitConfig } from '../../src/ratelimit/config.ts'
import { createRateLimiter } from '../../src/ratelimit/limiter.ts'
import { explainConnectionError } from '../../src/core/redis.ts'
import { ROUTES, tinyApp } from './support/app.ts'
import { recordingLogger } from './support/logger.ts'
import { redisServerSkipReason, ThrowawayRedis, uniquePrefix, type RedisTlsFiles } from './support/redis.ts'

function tlsSkipReason(): string | undefined {
  const noServer = redisServerSkipReason()
  if (noServer) return noServer
  if (spawnSync('openssl', ['version']).status !== 0) return 'the openssl CLI is needed to make the test certificates'
  return undefined
}

/** A CA (key and certificate) and, signed by it, a certificate for 127.0.0.1 and localhost. */
function makeCertificates(dir: string, name: string): RedisTlsFiles {
  const file = (suffix: string) => join(dir, `${name}-${suffix}`)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' })
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    `/CN=authgate test CA ${name}`,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
  )
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
  )
  writeFileSync(file('ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  openssl(
    'x509',
    '-req',
    '-days',
    '1',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-extfile',
    file('ext'),
    '-out',
    file('server.crt'),
  )
  return {
    cert: file('server.crt'),
    key: file('server.key'),
    ca: file('ca.crt'),
    caPem: readFileSync(file('ca.crt'), 'utf8'),
  }
}

describe('Redis over TLS', { skip: tlsSkipReason(), timeout: 60_000 }, () => {
  let dir: string
  let redis: ThrowawayRedis
  let right: RedisTlsFiles
  let wrong: RedisTlsFiles
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'authgate-tls-'))
    right = makeCertificates(dir, 'right')
    wrong = makeCertificates(dir, 'wrong')
    redis = await ThrowawayRedis.start({ tls: right })
  })
  after(async () => {
    await redis?.remove()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  function limiterWith(ca: string, onError: 'open' | 'closed' = 'open') {
    const config = loadRateLimitConfig(
      {
        AUTHGATE_RATE_LIMIT: '3/1h',
        AUTHGATE_REDIS_URL: redis.url,
        AUTHGATE_REDIS_TLS_CA: ca,
        AUTHGATE_REDIS_KEY_PREFIX: uniquePrefix('tls'),
        // Wide: a TLS handshake on a loaded machine is not what is measured here.
        AUTHGATE_REDIS_TIMEOUT: '1s',
        AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: onError,
      },
      ROUTES,
    )
    const logger = recordingLogger()
    const limiter = createRateLimiter(config, logger)
    return { limiter, logger, ...tinyApp(limiter) }
  }

  it('the URL is rediss:// and only the TLS port is open', () => {
    assert.match(redis.url, /^rediss:\/\/127\.0\.0\.1:\d+$/)
  })

  it('with the CA that signed the certificate, a rediss:// URL limits correctly', async () => {
    const { limiter, logger, app, handled } = limiterWith(right.ca)
    try {
      assert.equal(await limiter.ready(10_000), true, 'connected over TLS')
      const statuses: number[] = []
      for (let i = 0; i < 5; i++)
        statuses.push((await app.inject({ method: 'POST', url: '/signup', remoteAddress: '203.0.113.7' })).statusCode)
      assert.deepEqual(statuses, [200, 200, 200, 429, 429])
      assert.equal(handled.get('POST /signup'), 3)
      // Another client has its own budget, decided in the same Redis.
      const other = await app.inject({ method: 'POST', url: '/signup', remoteAddress: '203.0.113.8' })
      assert.equal(other.statusCode, 200)
      assert.match(String(other.headers.ratelimit), /;r=2;/)
      assert.equal(limiter.counters.storeErrors, 0)
      // Nothing went wrong: the only line is the 429's own (which limit, which route).
      assert.deepEqual(
        logger.lines.map((l) => [l.level, l.args[1]]),
        [['info', 'rate limit reached']],
      )
    } finally {
      await limiter.close()
    }
  })

  it('with another CA: refused, the log names the setting to check, and the failure policy answers', async () => {
    const { limiter, logger, app, handled } = limiterWith(wrong.ca, 'closed')
    try {
      assert.equal(await limiter.ready(3000), false, 'never connected')
      const warning = logger.lines.find((l) => l.level === 'warn' && l.args[1] === 'rate-limit store connection error')
      assert.ok(warning, `a connection warning was logged: ${JSON.stringify(logger.lines)}`)
      const { error } = warning.args[0] as { error: string }
      assert.match(error, /^Redis TLS: the server certificate is not accepted \(SELF_SIGNED_CERT_IN_CHAIN: /)
      assert.match(error, /AUTHGATE_REDIS_TLS_CA must hold the CA that signed it/)
      const res = await app.inject({ method: 'POST', url: '/signup', remoteAddress: '203.0.113.9' })
      assert.equal(res.statusCode, 429)
      assert.equal(res.headers['retry-after'], '1')
      assert.equal(handled.get('POST /signup'), undefined)
      assert.equal(limiter.counters.failedClosed, 1)
    } finally {
      await limiter.close()
    }
  })

  it('without a CA setting, Node.js’s default trust refuses the throwaway CA', async () => {
    const config = loadRateLimitConfig(
      { AUTHGATE_REDIS_URL: redis.url, AUTHGATE_REDIS_KEY_PREFIX: uniquePrefix('tls') },
      ROUTES,
    )
    assert.equal(config.redis?.tlsCa, undefined)
    const logger = recordingLogger()
    const limiter = createRateLimiter(config, logger)
    try {
      assert.equal(await limiter.ready(3000), false)
      assert.ok(
        logger.lines.some((l) =>
          /^Redis TLS: the server certificate is not accepted/.test((l.args[0] as { error?: string }).error ?? ''),
        ),
      )
    } finally {
      await limiter.close()
    }
  })
})

describe('AUTHGATE_REDIS_TLS_CA', () => {
  const load = (env: Record<string, string>) => loadRateLimitConfig(env, ROUTES)
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'authgate-tls-config-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('is read once at start-up into the Redis settings', () => {
    const path = join(dir, 'ca.pem')
    writeFileSync(path, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
    const config = load({ AUTHGATE_REDIS_URL: 'rediss+cluster://n1:6379', AUTHGATE_REDIS_TLS_CA: path })
    assert.equal(config.redis?.tlsCa, readFileSync(path, 'utf8'))
  })

  it('refuses a plain URL, an unreadable file and a file without a certificate', () => {
    const pem = join(dir, 'ca.pem')
    writeFileSync(pem, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')
    const notPem = join(dir, 'key.txt')
    writeFileSync(notPem, 'hello')
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ AUTHGATE_REDIS_URL: 'redis://127.0.0.1:6379', AUTHGATE_REDIS_TLS_CA: pem }, /only used with a TLS URL/],
      [{ AUTHGATE_REDIS_URL: 'rediss://127.0.0.1:6379', AUTHGATE_REDIS_TLS_CA: join(dir, 'none.pem') }, /cannot read /],
      [{ AUTHGATE_REDIS_URL: 'rediss://127.0.0.1:6379', AUTHGATE_REDIS_TLS_CA: notPem }, /holds no PEM certificate/],
    ]
    for (const [env, message] of cases) {
      assert.throws(
        () => load(env),
        (err: unknown) =>
          err instanceof AuthgateConfigError && /AUTHGATE_REDIS_TLS_CA/.test(err.message) && message.test(err.message),
      )
    }
  })

  it('leaves errors other than a refused certificate as they are', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })
    assert.equal(explainConnectionError(refused), refused)
    const plain = new Error('no code')
    assert.equal(explainConnectionError(plain), plain)
  })
})
