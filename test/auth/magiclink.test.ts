import assert from 'node:assert/strict'
import { LIMITABLE_ROUTES } from '../../src/auth/routes/index.ts'
import { describe, it } from 'node:test'
import { loadAccountLimits } from '../../src/ratelimit/abuse-config.ts'
import { MemoryStore } from '../../src/ratelimit/memory-store.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { withFakeBackend } from '../support/app.ts'

const send = (email: string, ip: string) => ({
  method: 'POST' as const,
  url: '/auth/magiclink',
  remoteAddress: ip,
  headers: { 'content-type': 'application/json' },
  payload: JSON.stringify({ email }),
})

describe('POST /magiclink, the older /otp', () => {
  it('is mounted, validated, forwarded, and deprecated in the document', async (t) => {
    const h = await withFakeBackend()
    t.after(() => h.close())
    const ok = await h.app.inject(send('a@example.com', '198.51.100.1'))
    assert.equal(ok.statusCode, 200, ok.body)
    assert.equal(h.backend.requests.at(-1)?.target, '/magiclink')
    const bad = await h.app.inject({ ...send('x', '198.51.100.1'), payload: '{}' })
    assert.equal(bad.statusCode, 422)
    assert.equal(bad.json().msg, 'Password recovery requires an email')
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const op = doc.paths['/auth/magiclink'].post
    assert.equal(op.deprecated, true)
    assert.equal(doc.paths['/auth/otp'].post.deprecated, undefined)
  })

  it('can be given its own per-account rate', () => {
    const c = loadAccountLimits({ AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /magiclink=2/1m' }, LIMITABLE_ROUTES)
    assert.equal(c.routes.get('POST /magiclink')?.limit, 2)
    assert.equal(loadAccountLimits({}, LIMITABLE_ROUTES).routes.get('POST /magiclink')?.limit, 5)
  })

  it('is limited per account and spends the e-mail budget', async (t) => {
    const h = await withFakeBackend(
      {},
      {
        rateLimit: loadRateLimitSettings({
          AUTHGATE_RATE_LIMITED_ROUTES: 'none',
          AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT: '2/1h',
          AUTHGATE_EMAIL_BUDGET: '6',
          AUTHGATE_BUDGET_CLIENT_SHARE: '100%',
        }),
        rateLimitStore: new MemoryStore(),
      },
    )
    t.after(() => h.close())
    h.backend.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    }
    const account = []
    for (let i = 0; i < 3; i++)
      account.push((await h.app.inject(send('Victim@example.com', `198.51.100.${i}`))).statusCode)
    assert.deepEqual(account, [200, 200, 429])
    // The budget of 6 an hour lets 3 through in any hour (D36): one more address, then the budget.
    const budget = []
    for (let i = 0; i < 2; i++)
      budget.push((await h.app.inject(send(`other${i}@example.com`, '198.51.100.9'))).statusCode)
    assert.deepEqual(budget, [200, 429])
    assert.equal(h.backend.requests.filter((r) => r.target === '/magiclink').length, 3)
  })
})
