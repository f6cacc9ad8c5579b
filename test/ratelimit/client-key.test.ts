import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { clientKey } from '../../src/ratelimit/client-key.ts'
import { bucketName } from '../../src/ratelimit/limiter.ts'

describe('client key', () => {
  it('normalises addresses to one key per client', () => {
    const cases: [string, number, string][] = [
      ['203.0.113.7', 64, '203.0.113.7'],
      ['::ffff:203.0.113.7', 64, '203.0.113.7'],
      ['::FFFF:cb00:7107', 64, '203.0.113.7'],
      ['2001:db8:1:2:3:4:5:6', 64, '2001:db8:1:2:0:0:0:0/64'],
      ['2001:DB8:1:2::9', 64, '2001:db8:1:2:0:0:0:0/64'],
      ['2001:db8::1', 48, '2001:db8:0:0:0:0:0:0/48'],
      ['2001:db8:1:2:3:4:5:6', 56, '2001:db8:1:0:0:0:0:0/56'],
      ['2001:db8:1:2ff:3:4:5:6', 56, '2001:db8:1:200:0:0:0:0/56'],
      ['2001:db8::1', 128, '2001:db8:0:0:0:0:0:1'],
      ['fe80::1%eth0', 64, 'fe80:0:0:0:0:0:0:0/64'],
      ['::1', 128, '0:0:0:0:0:0:0:1'],
      ['::', 64, '0:0:0:0:0:0:0:0/64'],
      ['64:ff9b::192.0.2.1', 128, '64:ff9b:0:0:0:0:c000:201'],
    ]
    for (const [ip, prefix, key] of cases) assert.equal(clientKey(ip, prefix), key, `${ip} /${prefix}`)
  })

  it('bucket names keep templates apart but drop braces (Redis Cluster hash tags)', () => {
    assert.equal(bucketName('/passkeys/{id}'), '/passkeys/:id')
    assert.equal(bucketName('/signup'), '/signup')
  })
})
