import assert from 'node:assert/strict'
import { test } from 'node:test'
import { judgeServicePath, normalPath, underServicePrefix } from '../../src/services/path.ts'
import { SERVICE_TABLE } from '../../src/services/table.ts'

const row = (prefix: string) => SERVICE_TABLE.find((r) => r.prefix === prefix)!

test('the normal form: segments percent-decoded one by one, empty ones dropped, case kept', () => {
  assert.deepEqual(normalPath(''), { ok: true, segments: [] })
  assert.deepEqual(normalPath('/'), { ok: true, segments: [] })
  assert.deepEqual(normalPath('//api///tenants/'), { ok: true, segments: ['api', 'tenants'] })
  assert.deepEqual(normalPath('/api/%74enants'), { ok: true, segments: ['api', 'tenants'] })
  // An encoded "/" stays inside its segment, as Phoenix decodes after splitting.
  assert.deepEqual(normalPath('/api/tenants%2f'), { ok: true, segments: ['api', 'tenants/'] })
  assert.deepEqual(normalPath('/broadcast/room%3A1/events/x'), {
    ok: true,
    segments: ['broadcast', 'room:1', 'events', 'x'],
  })
  assert.deepEqual(normalPath('/Tenants;x/a..b'), { ok: true, segments: ['Tenants;x', 'a..b'] })
  assert.deepEqual(normalPath('/100%25.txt'), { ok: true, segments: ['100%.txt'] })
})

test('dot segments, escaped separators behind %25 and malformed escapes are refused', () => {
  for (const path of [
    '/a/./b',
    '/a/../b',
    '/%2E%2e/x',
    '/a%2F..%2Fb',
    '/a%5C.%5Cb',
    '/a\\..\\b',
    '/%252e%252e/%252e%252e/auth/v1/admin/users',
    '/%252E',
    '/a%252fb',
    '/a%255cb',
    '/%25%32%65%25%32%65',
    '/%2525252e',
    '/%zz',
    '/%ff',
    '/%e2%82',
  ])
    assert.equal(normalPath(path).ok, false, path)
})

test("a row's prefix is taken as supabase-js spells it, and Realtime's API is an allow-list", () => {
  const rest = row('/rest/v1')
  assert.deepEqual(judgeServicePath(rest, 'GET', '/rest/v1/todos?select=*'), {
    ok: true,
    rest: '/todos',
    query: 'select=*',
  })
  assert.deepEqual(judgeServicePath(rest, 'GET', '/rest/v1'), { ok: true, rest: '', query: undefined })
  assert.deepEqual(judgeServicePath(rest, 'GET', '/rest/v1//todos'), { ok: true, rest: '//todos', query: undefined })
  for (const target of ['/%72est/v1/todos', '/rest/v1x', '/rest/v1%2ftodos', '/rest/V1/todos'])
    assert.equal(judgeServicePath(rest, 'GET', target).ok, false, target)
  const graphql = row('/graphql/v1')
  assert.equal(judgeServicePath(graphql, 'POST', '/graphql/v1').ok, true)
  assert.equal(judgeServicePath(graphql, 'POST', '/graphql/v1/').ok, false)
  const realtime = row('/realtime/v1/api')
  for (const [method, target] of [
    ['POST', '/realtime/v1/api/broadcast'],
    ['POST', '/realtime/v1/api/broadcast?apikey=x'],
    ['POST', '/realtime/v1/api/broadcast/room%3A1/events/typing?private=true'],
    ['POST', '/realtime/v1/api//broadcast/'],
    ['OPTIONS', '/realtime/v1/api/broadcast'],
    ['GET', '/realtime/v1/api/ping'],
    ['HEAD', '/realtime/v1/api/ping'],
  ] as const)
    assert.equal(judgeServicePath(realtime, method, target).ok, true, `${method} ${target}`)
  for (const [method, target] of [
    ['GET', '/realtime/v1/api'],
    ['GET', '/realtime/v1/api/tenants'],
    ['GET', '/realtime/v1/api//tenants'],
    ['GET', '/realtime/v1/api/%74enants'],
    ['GET', '/realtime/v1/api/tenants%2f'],
    ['GET', '/realtime/v1/api//openapi'],
    ['DELETE', '/realtime/v1/api/%74enants/realtime-dev'],
    ['GET', '/realtime/v1/api/broadcast'],
    ['POST', '/realtime/v1/api/Broadcast'],
    ['POST', '/realtime/v1/api/broadcast/room/events'],
    ['POST', '/realtime/v1/api/broadcast/room/events/x/y'],
    ['POST', '/realtime/v1/api/ping'],
  ] as const)
    assert.deepEqual(judgeServicePath(realtime, method, target).ok, false, `${method} ${target}`)
})

test('an unrouted path that reads as a service prefix is recognised for the refusal', () => {
  const prefixes = ['/rest/v1', '/realtime/v1/api', '/pg']
  for (const target of [
    '//rest/v1/x',
    '/REST/v1',
    '/rest%2fv1/x',
    '/rest//v1?x',
    '/realtime\\v1\\api/tenants',
    '/PG/x',
  ])
    assert.equal(underServicePrefix(target, prefixes), true, target)
  for (const target of ['/', '/restv1', '/rest', '/pgadmin', '/auth/v1/token'])
    assert.equal(underServicePrefix(target, prefixes), false, target)
})
