import assert from 'node:assert/strict'
import { IncomingMessage } from 'node:http'
import { Socket } from 'node:net'
import { describe, it } from 'node:test'
import {
  kClientIp,
  kDecision,
  kRequestId,
  kStoreFailed,
  kWatcher,
  shapeRawRequest,
} from '../../src/core/raw-request.ts'

const fresh = () => new IncomingMessage(new Socket()) as IncomingMessage & Record<symbol, unknown>
const ours = (req: object) =>
  Reflect.ownKeys(req).filter((k) => typeof k === 'symbol' && k.description?.startsWith('authgate.'))

describe('shapeRawRequest', () => {
  it('adds all five properties, undefined, in one order', () => {
    const req = fresh()
    shapeRawRequest(req)
    assert.deepEqual(ours(req), [kDecision, kRequestId, kClientIp, kWatcher, kStoreFailed])
    for (const k of ours(req)) assert.equal(req[k as symbol], undefined)
  })

  it('keeps an early decision first, with its value, and adds the rest after it in the same order', () => {
    const decided = fresh()
    const decision = { allowed: true }
    decided[kDecision] = decision
    shapeRawRequest(decided)
    const plain = fresh()
    shapeRawRequest(plain)
    assert.deepEqual(ours(decided), ours(plain))
    assert.equal(decided[kDecision], decision)
  })

  it('leaves a request it shaped already as it is', () => {
    const req = fresh()
    shapeRawRequest(req)
    req[kRequestId] = 'id'
    req[kClientIp] = '203.0.113.7'
    shapeRawRequest(req)
    assert.equal(req[kRequestId], 'id')
    assert.equal(req[kClientIp], '203.0.113.7')
  })
})
