import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import {
  crossSiteGetReason,
  crossSiteReason,
  isSameOriginNavigation,
  isUnsafeMethod,
  ownOrigin,
  standInGetReason,
} from '../../src/sessions/csrf.ts'

describe('the cross-site check of cookie-authenticated requests', () => {
  let app: FastifyInstance
  before(async () => {
    app = Fastify()
    app.post('/x', async (request) => ({
      reason: crossSiteReason(request, ['https://app.example.com']) ?? null,
      own: ownOrigin(request),
    }))
    app.get('/stand-in', async (request) => ({
      reason: standInGetReason(request, ['https://app.example.com']) ?? null,
    }))
    app.get('/get', async (request) => ({
      reason: crossSiteGetReason(request, ['https://app.example.com']) ?? null,
      navigation: isSameOriginNavigation(request),
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

  const get = async (headers: Record<string, string>) =>
    (await app.inject({ method: 'GET', url: '/get', headers: { host: 'api.example.com', ...headers } })).json() as {
      reason: string | null
      navigation: boolean
    }

  it('a GET that changes state: Sec-Fetch-Site same-origin, or an allowed Origin', async () => {
    assert.equal((await get({ 'sec-fetch-site': 'same-origin' })).reason, null)
    assert.equal((await get({ origin: 'https://app.example.com', 'sec-fetch-site': 'same-site' })).reason, null)
    // A top-level navigation from another site: no Origin, Sec-Fetch-Site cross-site.
    assert.match(
      String((await get({ 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' })).reason),
      /cross-site GET/,
    )
    // A sibling subdomain's navigation says same-site but cannot say which site.
    assert.match(String((await get({ 'sec-fetch-site': 'same-site' })).reason), /same-site GET/)
    assert.match(String((await get({ 'sec-fetch-site': 'none' })).reason), /none GET/)
    assert.match(String((await get({})).reason), /must carry Sec-Fetch-Site: same-origin or an allowed Origin/)
    assert.match(String((await get({ origin: 'https://evil.example.com' })).reason), /not allowed/)
  })

  it('a same-origin top-level navigation: navigate, same-origin, into a document (not an iframe)', async () => {
    const nav = { 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'same-origin', 'sec-fetch-dest': 'document' }
    assert.equal((await get(nav)).navigation, true)
    assert.equal((await get({ ...nav, 'sec-fetch-dest': 'iframe' })).navigation, false)
    assert.equal((await get({ ...nav, 'sec-fetch-site': 'same-site' })).navigation, false)
    assert.equal((await get({ ...nav, 'sec-fetch-mode': 'cors' })).navigation, false)
    assert.equal((await get({})).navigation, false)
  })

  it('a GET with a stand-in: an Origin must be allowed; without one, Sec-Fetch-Site must be same-origin when sent', async () => {
    const standIn = async (headers: Record<string, string>) =>
      (
        (
          await app.inject({ method: 'GET', url: '/stand-in', headers: { host: 'api.example.com', ...headers } })
        ).json() as { reason: string | null }
      ).reason
    assert.equal(await standIn({}), null)
    assert.equal(await standIn({ 'sec-fetch-site': 'same-origin' }), null)
    assert.equal(await standIn({ origin: 'http://api.example.com' }), null)
    assert.equal(await standIn({ origin: 'https://app.example.com', 'sec-fetch-site': 'same-site' }), null)
    assert.match(String(await standIn({ origin: 'https://evil.example' })), /not allowed/)
    assert.match(String(await standIn({ 'sec-fetch-site': 'same-site' })), /same-site request may not use a stand-in/)
    assert.match(String(await standIn({ 'sec-fetch-site': 'cross-site' })), /cross-site/)
  })
})
