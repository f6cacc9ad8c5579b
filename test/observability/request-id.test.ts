import assert from 'node:assert/strict'
import type { IncomingMessage } from 'node:http'
import { test } from 'node:test'
import { newRequestId, requestIdGenerator } from '../../src/observability/request-id.ts'

// What `crypto.randomUUID()` gives: lower-case hex, 8-4-4-4-12, version 4, RFC 9562 variant.
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('a fresh request id is a version 4 UUID spelled as crypto.randomUUID() spells it, and never repeats', () => {
  // Past several draws of the entropy (256 ids each), so a refill that reused bytes would show.
  const ids = new Set<string>()
  for (let i = 0; i < 3000; i++) {
    const id = newRequestId()
    assert.match(id, UUID_V4)
    ids.add(id)
  }
  assert.equal(ids.size, 3000)
  // Every hex digit outside the fixed version nibble is random: each takes all sixteen values.
  const list = [...ids]
  for (const at of [0, 9, 15, 20, 35]) assert.equal(new Set(list.map((id) => id[at])).size, 16, `position ${at}`)
  assert.deepEqual(new Set(list.map((id) => id[19])), new Set(['8', '9', 'a', 'b']))
})

test('the id an earlier one was spelled in is not changed by the next (each is its own string)', () => {
  const first = newRequestId()
  const copy = `${first}`
  newRequestId()
  assert.equal(first, copy)
})

test("genReqId gives an untrusted client's request a fresh id, never its own", () => {
  const genReqId = requestIdGenerator('x-request-id', [])
  const req = { headers: { 'x-request-id': 'chosen-by-client' }, socket: { remoteAddress: '203.0.113.9' } }
  const id = genReqId(req as unknown as IncomingMessage)
  assert.match(id, UUID_V4)
})
