import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { withFakeBackend } from '../support/app.ts'

describe('the header carrying the client IP to Supabase Auth', () => {
  it('is X-Forwarded-For with one value by default', async (t) => {
    const h = await withFakeBackend({ trustedProxies: ['127.0.0.1/32'] })
    t.after(() => h.close())
    await h.app.inject({
      method: 'GET',
      url: '/auth/settings',
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': '203.0.113.9, 198.51.100.7', 'sb-forwarded-for': '192.0.2.1' },
    })
    const sent = h.backend.requests.at(-1)!
    assert.equal(sent.headers['x-forwarded-for'], '198.51.100.7')
    assert.equal(sent.headers['sb-forwarded-for'], undefined)
  })

  it('is also the configured header (Sb-Forwarded-For), the client’s own copy dropped', async (t) => {
    const h = await withFakeBackend({ clientIpHeader: 'sb-forwarded-for' })
    t.after(() => h.close())
    await h.app.inject({
      method: 'GET',
      url: '/auth/settings',
      remoteAddress: '198.51.100.7',
      headers: { 'sb-forwarded-for': '192.0.2.1' },
    })
    const sent = h.backend.requests.at(-1)!
    assert.equal(sent.headers['sb-forwarded-for'], '198.51.100.7')
    assert.equal(sent.headers['x-forwarded-for'], '198.51.100.7')
  })

  it('may be any header name the operator picks, never the client’s value', async (t) => {
    const h = await withFakeBackend({ clientIpHeader: 'cf-connecting-ip' })
    t.after(() => h.close())
    await h.app.inject({
      method: 'GET',
      url: '/auth/settings',
      remoteAddress: '198.51.100.8',
      headers: { 'cf-connecting-ip': '192.0.2.1' },
    })
    const sent = h.backend.requests.at(-1)!
    assert.deepEqual(
      sent.rawHeaders.filter((_, i, a) => i % 2 === 1 && a[i - 1]!.toLowerCase() === 'cf-connecting-ip'),
      ['198.51.100.8'],
    )
  })

  it('refuses a name that is no header name', async () => {
    const { loadCoreConfig } = await import('../../src/config.ts')
    assert.throws(() => loadCoreConfig({ AUTHGATE_CLIENT_IP_HEADER: 'not a header' }), /AUTHGATE_CLIENT_IP_HEADER/)
    assert.equal(loadCoreConfig({ AUTHGATE_CLIENT_IP_HEADER: 'Sb-Forwarded-For' }).clientIpHeader, 'sb-forwarded-for')
  })
})
