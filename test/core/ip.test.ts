import assert from 'node:assert/strict'
import { isIPv4 } from 'node:net'
import { describe, it } from 'node:test'
import { isIPv4Address, unmapIPv4 } from '../../src/core/ip.ts'

describe('isIPv4Address', () => {
  it('answers as net.isIPv4 on the edges of the format', () => {
    const cases = [
      '0.0.0.0',
      '127.0.0.1',
      '255.255.255.255',
      '203.0.113.7',
      '1.2.3.4',
      '10.20.30.40',
      '256.1.1.1',
      '1.2.3.256',
      '01.2.3.4',
      '1.2.3.04',
      '1.2.3.00',
      '000.0.0.0',
      '1.2.3',
      '1.2.3.4.5',
      '1.2.3.',
      '.1.2.3',
      '1..2.3',
      '1.2.3.4 ',
      ' 1.2.3.4',
      '1.2.3.-4',
      '1.2.3.+4',
      '1.2.3.4a',
      '1.2.3.4%eth0',
      '1234.1.1.1',
      '1.2.3.1234',
      '999.999.999.999',
      '::ffff:1.2.3.4',
      '::1',
      '',
      '1.2.3.٤',
      '１.2.3.4',
    ]
    for (const text of cases) assert.equal(isIPv4Address(text), isIPv4(text), text)
  })

  it('answers as net.isIPv4 on random addresses, near-addresses and strings', () => {
    // Deterministic, so that a disagreement is reproducible: a small linear congruential generator.
    let seed = 42
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n
    const part = () => [String(next(300)), '0' + String(next(30)), String(next(2000)), ''][next(8) < 5 ? 0 : next(4)]
    let valid = 0
    for (let n = 0; n < 20_000; n++) {
      const parts = Array.from({ length: 3 + next(3) }, part)
      let text = parts.join(next(10) === 0 ? ':' : '.')
      if (next(10) === 0)
        text = text.slice(0, next(text.length + 1)) + 'a.:%'[next(4)] + text.slice(next(text.length + 1))
      assert.equal(isIPv4Address(text), isIPv4(text), text)
      if (isIPv4(text)) valid++
    }
    assert.ok(valid > 2_000, `only ${valid} of the strings were addresses`)
  })
})

describe('unmapIPv4', () => {
  it('takes the IPv4 address out of an IPv4-mapped IPv6 address, in any case, and leaves the rest', () => {
    assert.equal(unmapIPv4('::ffff:203.0.113.7'), '203.0.113.7')
    assert.equal(unmapIPv4('::FFFF:203.0.113.7'), '203.0.113.7')
    assert.equal(unmapIPv4('203.0.113.7'), '203.0.113.7')
    assert.equal(unmapIPv4('::ffff:not-ipv4'), '::ffff:not-ipv4')
    assert.equal(unmapIPv4('2001:db8::1'), '2001:db8::1')
    assert.equal(unmapIPv4('::1'), '::1')
  })
})
