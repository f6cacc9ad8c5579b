import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { clientFromChain, forwardedChain, normaliseAddress, trustRule } from '../../src/core/client-address.ts'

describe('normaliseAddress', () => {
  it('reads every form a proxy writes as the address it carries', () => {
    const cases: [written: string, address: string][] = [
      ['203.0.113.7', '203.0.113.7'],
      [' 203.0.113.7\t', '203.0.113.7'],
      ['203.0.113.7:40000', '203.0.113.7'], // Azure Application Gateway, IIS ARR
      ['"203.0.113.7"', '203.0.113.7'], // RFC 7239 quoted-string
      ['"203.0.113.7:4711"', '203.0.113.7'],
      ['[2001:db8::1]:4711', '2001:db8::1'],
      ['"[2001:db8::1]:4711"', '2001:db8::1'], // RFC 7239 §6, the example of the RFC
      ['[2001:db8::1]', '2001:db8::1'],
      ['[2001:db8::1]:_hidden', '2001:db8::1'], // RFC 7239 obfuscated port
      ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'], // RFC 5952 text
      ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // the first of two equal zero runs
      ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // one zero group is no run
      ['fe80::1%eth0', 'fe80::1'], // a zone names the proxy's interface
      ['[fe80::1%25eth0]:80', 'fe80::1'],
      ['::ffff:203.0.113.7', '203.0.113.7'], // a dual-stack socket's IPv4 client
      ['::FFFF:cb00:7107', '203.0.113.7'],
      ['[::ffff:203.0.113.7]:443', '203.0.113.7'],
      ['::1', '::1'],
      ['::', '::'],
    ]
    for (const [written, address] of cases) assert.equal(normaliseAddress(written), address, written)
  })

  it('finds no address in what is none', () => {
    for (const text of [
      '',
      'unknown', // Squid, nginx's `$remote_addr` when unset
      '_hidden', // RFC 7239 obfuscated node
      'client.example',
      '203.0.113.7:port',
      '203.0.113.7:123456',
      '203.0.113.07', // leading zeros: octal to some parsers, refused by Go's
      '203.0.113',
      '[2001:db8::1',
      '[2001:db8::1]x',
      '[203.0.113.7]:80',
      '2001:db8::1::2',
      'for=203.0.113.7',
      '"',
    ])
      assert.equal(normaliseAddress(text), undefined, JSON.stringify(text))
  })
})

describe('clientFromChain', () => {
  it('is the last address of the chain, normalised', () => {
    assert.deepEqual(clientFromChain(['10.0.0.2', '198.51.100.7:40000']), { ip: '198.51.100.7' })
    assert.deepEqual(clientFromChain(['::ffff:10.0.0.2']), { ip: '10.0.0.2' })
  })

  it('never makes an entry that is no address the client: the proxy that forwarded it stands in', () => {
    assert.deepEqual(clientFromChain(['10.0.0.2', 'unknown']), { ip: '10.0.0.2', unreadable: 'unknown' })
    assert.deepEqual(clientFromChain(['10.0.0.2', '10.0.0.3:9000', 'x']), { ip: '10.0.0.3', unreadable: 'x' })
    assert.deepEqual(clientFromChain([]), { ip: 'unknown' })
  })
})

describe('forwardedChain', () => {
  const trusted = trustRule((a) => a.startsWith('10.'))

  it('walks X-Forwarded-For from the right while the address is a trusted proxy’s, each judged normalised', () => {
    // The trusted hop writes its own address with a port: the walk goes on past it.
    assert.deepEqual(forwardedChain('10.0.0.2', '1.1.1.1, 203.0.113.7:5000, 10.0.0.5:6000', trusted), [
      '10.0.0.2',
      '10.0.0.5:6000',
      '203.0.113.7:5000',
    ])
    assert.deepEqual(forwardedChain('10.0.0.2', ['203.0.113.7', ' 10.0.0.9 ,,'], trusted), [
      '10.0.0.2',
      '10.0.0.9',
      '203.0.113.7',
    ])
  })

  it('believes nothing from a peer that is not trusted', () => {
    assert.deepEqual(forwardedChain('192.0.2.1', '10.0.0.5', trusted), ['192.0.2.1'])
    assert.deepEqual(forwardedChain(undefined, '10.0.0.5', trusted), [])
  })
})
