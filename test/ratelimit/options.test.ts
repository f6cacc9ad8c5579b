import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import Fastify from 'fastify'
import { LIMITABLE_ROUTES } from '../../src/auth/routes/index.ts'
import { AuthgateConfigError } from '../../src/config.ts'
import { authgate } from '../../src/plugin.ts'
import { resolveRateLimitOptions, type RateLimitOptions } from '../../src/ratelimit/options.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'

const resolve = (options: RateLimitOptions) => resolveRateLimitOptions(options, LIMITABLE_ROUTES)

function refusedAs(options: object, option: string, message: RegExp) {
  assert.throws(
    () => resolve(options as RateLimitOptions),
    (err: Error) => err instanceof AuthgateConfigError && err.option === option && message.test(err.message),
  )
}

describe('rate limiting from code: a partial object, read as the environment is', () => {
  it('no options: exactly the documented defaults, as from an empty environment', () => {
    const fromCode = resolve({})
    const fromEnv = loadRateLimitSettings({})
    assert.deepEqual([...fromCode.routes], [...fromEnv.routes])
    assert.deepEqual(fromCode.defaultPolicy, fromEnv.defaultPolicy)
    assert.deepEqual([...fromCode.accounts!.routes], [...fromEnv.accounts!.routes])
    assert.deepEqual(fromCode.budgets, fromEnv.budgets)
  })

  it('each option gives what its variable gives', () => {
    const options: RateLimitOptions = {
      rate: '5/1m',
      limitedRoutes: ['POST /token', 'POST /signup'],
      routeRates: { 'POST /signup': '2/1h', 'POST /token': false },
      onRedisError: 'closed',
      ipv6PrefixLength: 48,
      memoryMaxKeys: 5000,
      accountRate: false,
      accountMessageRate: '3/1h',
      accountRouteRates: { 'POST /otp': false },
      deviceCookie: false,
      emailBudget: 10,
      smsBudget: false,
      budgetClientShare: 0.5,
    }
    const env = {
      AUTHGATE_RATE_LIMIT: '5/1m',
      AUTHGATE_RATE_LIMITED_ROUTES: 'POST /token,POST /signup',
      AUTHGATE_RATE_LIMIT_ROUTES: 'POST /signup=2/1h,POST /token=off',
      AUTHGATE_RATE_LIMIT_ON_REDIS_ERROR: 'closed',
      AUTHGATE_RATE_LIMIT_IPV6_PREFIX: '48',
      AUTHGATE_RATE_LIMIT_MEMORY_MAX_KEYS: '5000',
      AUTHGATE_ACCOUNT_RATE_LIMIT: 'off',
      AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT: '3/1h',
      AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /otp=off',
      AUTHGATE_ACCOUNT_DEVICE_COOKIE: 'off',
      AUTHGATE_EMAIL_BUDGET: '10',
      AUTHGATE_SMS_BUDGET: 'off',
      AUTHGATE_BUDGET_CLIENT_SHARE: '50%',
    }
    const a = resolve(options)
    const b = loadRateLimitSettings(env)
    assert.deepEqual([...a.routes], [...b.routes])
    assert.deepEqual([...a.routes.keys()], ['POST /signup'])
    assert.equal(a.onRedisError, 'closed')
    assert.equal(a.ipv6PrefixLength, 48)
    assert.equal(a.memoryMaxKeys, 5000)
    assert.deepEqual([...a.accounts!.routes], [...b.accounts!.routes])
    assert.equal(a.accounts!.deviceCookie, false)
    assert.deepEqual(a.budgets, b.budgets)
    assert.deepEqual(resolve({ limitedRoutes: false }).routes.size, 0)
  })

  it('the Redis options build the same connection as the variables', () => {
    const c = resolve({ redisUrl: 'redis://127.0.0.1:6379', redisKeyPrefix: 'x:', redisTimeoutMs: 250 })
    assert.deepEqual(c.redis, { url: 'redis://127.0.0.1:6379', keyPrefix: 'x:', timeoutMs: 250 })
  })

  it('a bad value is refused by the same rules, named as the option', () => {
    refusedAs({ rate: '5 per minute' }, 'rateLimit.rate', /rate/)
    refusedAs({ rate: 5 }, 'rateLimit.rate', /non-empty string/)
    refusedAs({ limitedRoutes: ['POST /sigup'] }, 'rateLimit.limitedRoutes', /no such route/)
    refusedAs({ accountRouteRates: { 'POST /verify': '1/1m' } }, 'rateLimit.accountRouteRates', /names no account/)
    refusedAs({ onRedisError: 'ajar' }, 'rateLimit.onRedisError', /"open" or "closed"/)
    refusedAs({ ipv6PrefixLength: 129 }, 'rateLimit.ipv6PrefixLength', /between 1 and 128/)
    refusedAs({ emailBudget: 0 }, 'rateLimit.emailBudget', /count per hour/)
    refusedAs({ budgetClientShare: 2 }, 'rateLimit.budgetClientShare', /percentage/)
    refusedAs({ accountKeySecret: 'short' }, 'rateLimit.accountKeySecret', /32 characters/)
  })

  it('an unknown option is refused with the one meant', () => {
    refusedAs({ rates: '5/1m' }, 'rateLimit.rates', /did you mean rateLimit\.rate\?/)
  })

  it('the plugin takes the options and limits by them', async () => {
    const app = Fastify()
    await app.register(authgate, { rateLimit: { rate: '7/1m', limitedRoutes: ['POST /token'] } })
    await app.ready()
    try {
      const res = await app.inject({ method: 'POST', url: '/auth/token?grant_type=password', payload: {} })
      assert.equal(res.headers['ratelimit-policy'], '"default";q=7;w=60')
      assert.equal(app.authgate.rateLimiter?.hookFor('POST', '/signup'), undefined)
    } finally {
      await app.close()
    }
  })
})
