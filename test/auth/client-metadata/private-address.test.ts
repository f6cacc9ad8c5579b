import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isPrivateAddress } from '../../../src/auth/client-metadata/private-address.ts'

/** Each address a document may not come from, with why. */
const REFUSED: ReadonlyArray<readonly [string, string]> = [
  ['127.0.0.1', 'loopback'],
  ['10.1.2.3', 'private'],
  ['172.20.0.1', 'private'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'link-local (cloud metadata)'],
  ['100.64.0.1', 'shared address space'],
  ['0.0.0.0', 'this network'],
  ['192.0.0.8', 'IETF protocol assignments'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['198.18.0.1', 'benchmarking'],
  ['203.0.113.5', 'documentation'],
  ['224.0.0.1', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  ['::1', 'loopback'],
  ['::', 'unspecified'],
  ['0:0:0:0:0:0:0:1', 'loopback, written out'],
  ['::7f00:1', 'IPv4-compatible 127.0.0.1'],
  ['::127.0.0.1', 'IPv4-compatible 127.0.0.1, dotted'],
  ['::808:808', 'IPv4-compatible, deprecated whatever it embeds'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hexadecimal'],
  ['::FFFF:A9FE:A9FE', 'IPv4-mapped link-local, upper case'],
  ['::ffff:0:7f00:1', 'IPv4-translated 127.0.0.1'],
  ['::ffff:0:808:808', 'IPv4-translated, not a destination'],
  ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
  ['64:ff9b::127.0.0.1', 'NAT64 of 127.0.0.1, dotted'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
  ['64:ff9b:1::808:808', 'local-use NAT64'],
  ['64:ff9b:1:ffff::1', 'local-use NAT64, elsewhere in the /48'],
  ['2002:7f00:1::', '6to4 of 127.0.0.1'],
  ['2002:c0a8:101::1', '6to4 of 192.168.1.1'],
  ['2002:a9fe:a9fe:1::1', '6to4 of the metadata address'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001:2::1', 'benchmarking'],
  ['2001:10::1', 'ORCHID'],
  ['2001:20::1', 'ORCHIDv2'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['5f00::1', 'segment routing'],
  ['100::1', 'discard'],
  ['100:0:0:1::1', 'dummy prefix'],
  ['fd00::1', 'unique local'],
  ['fc00::1', 'unique local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local with a zone'],
  ['fec0::1', 'site-local'],
  ['feff::1', 'site-local, end of the range'],
  ['ff02::1', 'multicast'],
  ['not-an-address', 'unreadable'],
  ['', 'empty'],
]

const ALLOWED: readonly string[] = [
  '93.184.216.34',
  '8.8.8.8',
  '1.1.1.1',
  '2606:4700:4700::1111',
  '2a00:1450:4001:81c::200e',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
  '64:ff9b::808:808',
  '64:ff9b::8.8.8.8',
  '2002:808:808::1',
  '2620:4f:8000::1',
]

test('private, loopback, link-local, reserved and transition addresses are refused, each spelling of them', () => {
  for (const [address, why] of REFUSED) assert.equal(isPrivateAddress(address), true, `${address} (${why})`)
})

test('public addresses are allowed, through NAT64 and 6to4 too', () => {
  for (const address of ALLOWED) assert.equal(isPrivateAddress(address), false, address)
})
