import assert from 'node:assert/strict'
import { test } from 'node:test'
import { outboundRequestHeaders, withoutCookie } from '../../src/proxy/headers.ts'

test('withoutCookie takes out the named cookie and keeps the others as written', () => {
  assert.equal(withoutCookie('a=1; sid=x; b=2', 'sid'), 'a=1; b=2')
  assert.equal(withoutCookie('sid=x; b=2', 'sid'), 'b=2')
  assert.equal(withoutCookie('a=1;sid=x', 'sid'), 'a=1')
  assert.equal(withoutCookie('sid=x', 'sid'), undefined)
  assert.equal(withoutCookie('sid=x; sid=y', 'sid'), undefined, 'every cookie of the name')
  assert.equal(withoutCookie('sid_other=1; a=sid', 'sid'), 'sid_other=1; a=sid', 'a name that only starts the same')
  assert.equal(withoutCookie('a=1;  b=2', 'sid'), 'a=1;  b=2', 'untouched when the name is absent')
})

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
  const out = outboundRequestHeaders(raw, { host: 'h' }, { clientIp: '192.0.2.1', ownCookie: 'authgate_session' })
  assert.deepEqual(out, ['Cookie', 'a=1; b=2', 'X-Other', 'v', 'x-forwarded-for', '192.0.2.1'])
  const without = outboundRequestHeaders(raw, { host: 'h' }, { clientIp: '192.0.2.1' })
  assert.deepEqual(
    without.filter((_, i) => without[i - 1] === 'Cookie'),
    ['a=1; authgate_session=abc; b=2', 'authgate_session=def'],
    'without cookie sessions, authgate owns no cookie and forwards them all',
  )
})
