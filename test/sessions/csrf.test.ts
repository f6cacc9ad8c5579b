import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { crossSiteReason, isUnsafeMethod, ownOrigin } from '../../src/sessions/csrf.ts'

describe('the cross-site check of cookie-authenticated requests', () => {
  let app: FastifyInstance
  before(async () => {
    app = Fastify()
    app.post('/x', async (request) => ({
      reason: crossSiteReason(request, ['https://app.example.com']) ?? null,
      own: ownOrigin(request),
    }))
    await app.ready()
  })
  after(() => app.close())

  const reason = async (headers: Record<string, string>) =>
    (
      (await app.inject({ method: 'POST', url: '/x', headers: { host: 'api.example.com', ...headers } })).json() as {
        reason: string | null
      }
    ).reason

  it('the own origin and the allowed ones pass', async () => {
    assert.equal(await reason({ origin: 'http://api.example.com' }), null)
    assert.equal(await reason({ origin: 'http://api.example.com', 'sec-fetch-site': 'same-origin' }), null)
    assert.equal(await reason({ origin: 'https://app.example.com', 'sec-fetch-site': 'same-site' }), null)
  })

  it('no Origin, `null`, another origin or a cross-site fetch are refused', async () => {
    assert.match(String(await reason({})), /must carry the Origin/)
    assert.match(String(await reason({ origin: 'null' })), /must carry the Origin/)
    assert.match(String(await reason({ origin: 'https://evil.example.com' })), /not allowed/)
    assert.match(
      String(await reason({ origin: 'https://app.example.com', 'sec-fetch-site': 'cross-site' })),
      /cross-site request/,
    )
    assert.match(String(await reason({ origin: 'http://api.example.com', 'sec-fetch-site': 'none' })), /none request/)
  })

  it('only unsafe methods are checked', () => {
    assert.deepEqual(['GET', 'head', 'OPTIONS', 'POST', 'put', 'PATCH', 'DELETE'].map(isUnsafeMethod), [
      false,
      false,
      false,
      true,
      true,
      true,
      true,
    ])
  })
})
