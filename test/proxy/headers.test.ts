import assert from 'node:assert/strict'
import { test } from 'node:test'
import { inboundResponseHeaders, outboundRequestHeaders } from '../../src/proxy/headers.ts'

test('the session cookie is not sent on; other cookies and headers are', () => {
  const raw = [
    'Host',
    'h',
    'Cookie',
    'a=1; authgate_session=abc; b=2',
    'Cookie',
    'authgate_session=def',
    'X-Other',
    'v',
  ]
  const out = outboundRequestHeaders(
    raw,
    { host: 'h' },
    { identity: ['x-forwarded-for', '192.0.2.1'], ownCookies: ['authgate_session'] },
  )
  assert.deepEqual(out, ['Cookie', 'a=1; b=2', 'X-Other', 'v', 'x-forwarded-for', '192.0.2.1'])
  const without = outboundRequestHeaders(raw, { host: 'h' }, { identity: ['x-forwarded-for', '192.0.2.1'] })
  assert.deepEqual(
    without.filter((_, i) => without[i - 1] === 'Cookie'),
    ['a=1; authgate_session=abc; b=2', 'authgate_session=def'],
    'without cookie sessions, authgate owns no cookie and forwards them all',
  )
})

test('a Connection header drops the names it lists, however often the same spellings come', () => {
  const identity = { identity: ['x-forwarded-for', '192.0.2.1'] }
  const raw = (connection: string) => [
    'Host',
    'h',
    'Connection',
    connection,
    'Keep-Alive',
    'timeout=5',
    'X-Drop-Me',
    '1',
    'ACCEPT',
    '*/*',
  ]
  for (let round = 0; round < 3; round++) {
    for (const alone of ['keep-alive', 'Keep-Alive', 'KEEP-ALIVE'])
      assert.deepEqual(outboundRequestHeaders(raw(alone), { connection: alone }, identity), [
        'X-Drop-Me',
        '1',
        'ACCEPT',
        '*/*',
        'x-forwarded-for',
        '192.0.2.1',
      ])
    for (const listing of ['keep-alive, X-Drop-Me', 'x-drop-me', 'Keep-Alive,accept'])
      assert.deepEqual(
        outboundRequestHeaders(raw(listing), { connection: listing }, identity).filter((_, i) => i % 2 === 0),
        listing.toLowerCase().includes('accept') ? ['X-Drop-Me', 'x-forwarded-for'] : ['ACCEPT', 'x-forwarded-for'],
        listing,
      )
  }
})

test('the names always dropped stay dropped on every request that sends them, in any spelling', () => {
  const identity = { identity: ['x-forwarded-for', '192.0.2.1'] }
  const raw = ['Host', 'h', 'X_Real_IP', '6.6.6.6', 'x.forwarded.for', '6.6.6.6', 'TE', 'trailers', 'Accept', '*/*']
  for (let round = 0; round < 3; round++)
    assert.deepEqual(outboundRequestHeaders(raw, { host: 'h' }, identity), [
      'Accept',
      '*/*',
      'x-forwarded-for',
      '192.0.2.1',
    ])
})

test('a backend header is relayed with its own value, whether the same name came with the same value before or not', () => {
  const raw = (...pairs: string[]) => pairs.map((p) => Buffer.from(p, 'latin1'))
  const long = `https://example.com/callback?state=${'s'.repeat(80)}`
  const answers = [
    ['Date', 'Sun, 29 Nov 2026 14:00:00 GMT', 'Content-Type', 'application/json', 'Connection', 'keep-alive'],
    // The same length with a byte changed at the end, at the start; a shorter and a longer value.
    ['Date', 'Sun, 29 Nov 2026 14:00:01 GMT', 'Content-Type', 'application/json', 'Connection', 'keep-alive'],
    ['Date', 'Mon, 29 Nov 2026 14:00:01 GMT', 'Content-Type', 'application/jsoN', 'Connection', 'keep-alive'],
    ['Date', 'x', 'Content-Type', 'application/json; charset=utf-8', 'Connection', 'close'],
    ['Date', '', 'Content-Type', 'text/html; charset=\xe9', 'Location', long, 'Connection', 'keep-alive'],
    ['Date', 'Sun, 29 Nov 2026 14:00:00 GMT', 'Location', long, 'Location', `${long}!`, 'Connection', 'keep-alive'],
  ]
  for (let round = 0; round < 2; round++)
    for (const pairs of answers) {
      const expected = pairs.filter((_, i) => pairs[i - (i % 2)] !== 'Connection')
      assert.deepEqual(inboundResponseHeaders(raw(...pairs)), expected, pairs.join(' '))
    }
})

test('a request header authgate drops is dropped in every spelling, however often it comes', () => {
  const identity = { identity: ['x-forwarded-for', '192.0.2.1'] }
  const raw = ['X-Real-IP', '1', 'x_real_ip', '2', 'Transfer-Encoding', 'chunked', 'X-Kept', 'k', 'Host', 'h']
  for (let round = 0; round < 3; round++)
    assert.deepEqual(outboundRequestHeaders(raw, {}, identity), ['X-Kept', 'k', 'x-forwarded-for', '192.0.2.1'])
})
