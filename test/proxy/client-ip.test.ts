import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { withFakeBackend } from '../support/app.ts'
import { logCapture } from '../support/log-capture.ts'

/**
 * What real proxies write into X-Forwarded-For for a client, and the one address authgate must
 * derive from it: the key it limits by and the address Supabase Auth is sent.
 */
interface ProxyForm {
  proxy: string
  /** The connection's address: the proxy's. */
  socket: string
  /** AUTHGATE_TRUSTED_PROXIES for this deployment. */
  trusted: string[]
  /** X-Forwarded-For as it arrives, the client's own forged entry first where the proxy appends. */
  forwardedFor: string
  client: string
}

const FORMS: ProxyForm[] = [
  // nginx `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for`: appends $remote_addr.
  {
    proxy: 'nginx',
    socket: '10.0.0.2',
    trusted: ['10.0.0.0/8'],
    forwardedFor: '1.1.1.1, 203.0.113.7',
    client: '203.0.113.7',
  },
  {
    proxy: 'nginx (IPv6 client)',
    socket: '10.0.0.2',
    trusted: ['10.0.0.0/8'],
    forwardedFor: '2001:db8::7',
    client: '2001:db8::7',
  },
  // HAProxy `option forwardfor` on a dual-stack bind: the IPv4 client in its mapped form.
  {
    proxy: 'HAProxy',
    socket: '10.0.0.2',
    trusted: ['10.0.0.0/8'],
    forwardedFor: '::ffff:203.0.113.7',
    client: '203.0.113.7',
  },
  // Envoy (use_remote_address) appends the peer; a link-local peer keeps its zone.
  {
    proxy: 'Envoy',
    socket: '10.0.0.2',
    trusted: ['10.0.0.0/8'],
    forwardedFor: '1.1.1.1,203.0.113.7',
    client: '203.0.113.7',
  },
  {
    proxy: 'Envoy (link-local)',
    socket: '10.0.0.2',
    trusted: ['10.0.0.0/8'],
    forwardedFor: 'fe80::7%eth0',
    client: 'fe80::7',
  },
  // Cloudflare appends the visitor to X-Forwarded-For (its CF-Connecting-IP is not read).
  {
    proxy: 'Cloudflare',
    socket: '173.245.48.5',
    trusted: ['173.245.48.0/20'],
    forwardedFor: '203.0.113.7',
    client: '203.0.113.7',
  },
  // AWS ALB appends the client, IPv6 in its plain form.
  {
    proxy: 'AWS ALB',
    socket: '10.0.1.9',
    trusted: ['10.0.0.0/16'],
    forwardedFor: '2001:DB8:0:0::7',
    client: '2001:db8::7',
  },
  // Azure Application Gateway (v2) writes the client with its source port.
  {
    proxy: 'Azure Application Gateway',
    socket: '10.1.0.4',
    trusted: ['10.1.0.0/24'],
    forwardedFor: '203.0.113.7:51234',
    client: '203.0.113.7',
  },
  {
    proxy: 'Azure Application Gateway (IPv6)',
    socket: '10.1.0.4',
    trusted: ['10.1.0.0/24'],
    forwardedFor: '[2001:db8::7]:51234',
    client: '2001:db8::7',
  },
  // GCP's external HTTP(S) load balancer appends `client, load-balancer-IP`: both hops are trusted.
  {
    proxy: 'GCP load balancer',
    socket: '35.191.0.10',
    trusted: ['35.191.0.0/16', '34.120.0.1'],
    forwardedFor: '1.1.1.1, 203.0.113.7, 34.120.0.1',
    client: '203.0.113.7',
  },
  // Two hops, the nearer writing its own address with a port: the walk goes past it.
  {
    proxy: 'Application Gateway behind nginx',
    socket: '10.0.0.2',
    trusted: ['10.0.0.0/8'],
    forwardedFor: '203.0.113.7:40000, 10.0.0.9:443',
    client: '203.0.113.7',
  },
]

const NO_PROXY: { form: string; socket: string; client: string }[] = [
  { form: 'IPv4', socket: '203.0.113.7', client: '203.0.113.7' },
  { form: 'IPv4 on a dual-stack socket', socket: '::ffff:203.0.113.7', client: '203.0.113.7' },
  { form: 'IPv6', socket: '2001:db8:0:0:0:0:0:7', client: '2001:db8::7' },
  { form: 'link-local IPv6 with a zone', socket: 'fe80::7%eth0', client: 'fe80::7' },
]

const sentIdentity = (recorded: { rawHeaders: string[] }, name: string) =>
  recorded.rawHeaders.filter((_, i, a) => i % 2 === 1 && a[i - 1]!.toLowerCase() === name)

describe('one client address, whatever the proxy writes', () => {
  for (const form of FORMS) {
    it(`behind ${form.proxy}: ${JSON.stringify(form.forwardedFor)} is ${form.client}`, async (t) => {
      const h = await withFakeBackend({ trustedProxies: form.trusted, clientIpHeader: 'sb-forwarded-for' })
      t.after(() => h.close())
      await h.app.inject({
        method: 'GET',
        url: '/auth/settings',
        remoteAddress: form.socket,
        headers: { 'x-forwarded-for': form.forwardedFor },
      })
      const sent = h.backend.requests.at(-1)!
      assert.deepEqual(sentIdentity(sent, 'x-forwarded-for'), [form.client])
      assert.deepEqual(sentIdentity(sent, 'sb-forwarded-for'), [form.client])
    })
  }

  for (const form of NO_PROXY) {
    it(`with no proxy, a socket's ${form.form} address is ${form.client}; X-Forwarded-For is not read`, async (t) => {
      const h = await withFakeBackend({ clientIpHeader: 'sb-forwarded-for' })
      t.after(() => h.close())
      await h.app.inject({
        method: 'GET',
        url: '/auth/settings',
        remoteAddress: form.socket,
        headers: { 'x-forwarded-for': '198.51.100.1:1' },
      })
      const sent = h.backend.requests.at(-1)!
      assert.deepEqual(sentIdentity(sent, 'x-forwarded-for'), [form.client])
      assert.deepEqual(sentIdentity(sent, 'sb-forwarded-for'), [form.client])
    })
  }
})

describe('the rate limit behind a proxy that writes ports', () => {
  it('is one bucket for one client, whatever its source port (2/min: 200, 200, 429)', async (t) => {
    const h = await withFakeBackend(
      { trustedProxies: ['10.1.0.0/24'] },
      { rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMIT: '2/1m' }) },
    )
    t.after(() => h.close())
    const statuses: number[] = []
    for (const port of [40000, 40001, 40002]) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/auth/otp',
        remoteAddress: '10.1.0.4',
        headers: { 'x-forwarded-for': `198.51.100.7:${port}`, 'content-type': 'application/json' },
        payload: { email: `user${port}@example.com` },
      })
      statuses.push(res.statusCode)
    }
    assert.deepEqual(statuses, [200, 200, 429])
    assert.deepEqual(
      h.backend.requests.map((r) => sentIdentity(r, 'x-forwarded-for')),
      [['198.51.100.7'], ['198.51.100.7']],
    )
  })

  it('keys an entry that is no address on the trusted proxy’s own address, with a warning and a count', async (t) => {
    const logs = logCapture()
    const h = await withFakeBackend(
      { trustedProxies: ['10.1.0.0/24'] },
      {
        rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMIT: '2/1m' }),
        logger: { stream: logs.stream, level: 'info' },
      },
    )
    t.after(() => h.close())
    const count = async () => {
      const text = (await h.app.inject({ method: 'GET', url: '/metrics' })).body
      return Number(/^authgate_client_address_unreadable_total (\d+)$/m.exec(text)?.[1])
    }
    const before = await count()
    const statuses: number[] = []
    // Each a different string: were any of them a key, each would be a budget of its own.
    for (const entry of ['unknown', '_hidden', 'client-3.example']) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/auth/otp',
        remoteAddress: '10.1.0.4',
        headers: { 'x-forwarded-for': entry, 'content-type': 'application/json' },
        payload: { email: 'a@example.com' },
      })
      statuses.push(res.statusCode)
    }
    assert.deepEqual(statuses, [200, 200, 429])
    assert.deepEqual(
      h.backend.requests.map((r) => sentIdentity(r, 'x-forwarded-for')),
      [['10.1.0.4'], ['10.1.0.4']],
    )
    assert.equal((await count()) - before, 3)
    const warnings = logs.lines.filter((l) => /no IP address/.test(String(l.msg)))
    assert.equal(warnings.length, 1, 'one line per proxy and minute')
    assert.equal(warnings[0]!.proxy, '10.1.0.4')
    assert.equal(warnings[0]!.entry, 'unknown')
  })
})
