import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { jwtClaims, StandIns } from '../../src/sessions/stand-ins.ts'

const k1 = { id: 'k1', key: randomBytes(32) }
const k2 = { id: 'k2', key: randomBytes(32) }
const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url')
const REAL = `${b64({ alg: 'ES256', kid: 'x' })}.${b64({ sub: 'u1', role: 'authenticated', aal: 'aal1', exp: 2000 })}.sig`

describe('stand-ins', () => {
  const standIns = new StandIns([k1])

  it("an access stand-in carries the real token's claims and expiry, bound to the session, not the token", () => {
    const token = standIns.access('handle-a', REAL, 2000)
    assert.ok(standIns.isAccess(token))
    assert.ok(!standIns.isAccess(REAL))
    assert.ok(!token.includes('sig'))
    const claims = jwtClaims(token)!
    assert.equal(claims.sub, 'u1')
    assert.equal(claims.aal, 'aal1')
    assert.equal(claims.exp, 2000)
    assert.equal(typeof claims.asb, 'string')
    // auth-js's checks: three base64url parts, an HS256 header (getClaims() then asks GET /user).
    for (const part of token.split('.')) assert.match(part, /^[A-Za-z0-9_-]+$/)
    assert.equal(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).alg, 'HS256')
  })

  it('stands for its own session until it expires: another session, a changed claim or a foreign key is refused', () => {
    const token = standIns.access('handle-a', REAL, 2000)
    assert.equal(standIns.checkAccess(token, 'handle-a', 1999), undefined)
    assert.equal(standIns.checkAccess(token, 'handle-a', 2000), 'expired')
    assert.equal(standIns.checkAccess(token, 'handle-b', 1000), 'other_session')
    const [head, , mac] = token.split('.')
    const widened = `${head}.${b64({ ...jwtClaims(token), exp: 9_999_999_999 })}.${mac}`
    assert.equal(standIns.checkAccess(widened, 'handle-a', 1000), 'forged')
    const foreign = new StandIns([{ id: 'k1', key: randomBytes(32) }]).access('handle-a', REAL, 2000)
    assert.equal(standIns.checkAccess(foreign, 'handle-a', 1000), 'forged')
    assert.equal(standIns.checkAccess(REAL, 'handle-a', 1000), 'forged')
  })

  it('a refresh stand-in is opaque, one per session', () => {
    const token = standIns.refresh('handle-a')
    assert.match(token, /^agr\.k1\.[A-Za-z0-9_-]{43}$/)
    assert.equal(token, standIns.refresh('handle-a'))
    assert.ok(standIns.checkRefresh(token, 'handle-a'))
    assert.ok(!standIns.checkRefresh(token, 'handle-b'))
    assert.ok(!standIns.checkRefresh(`${token}x`, 'handle-a'))
    assert.ok(!standIns.checkRefresh('agr.k9.abc', 'handle-a'))
  })

  it('key rotation: stand-ins made under an older key are still taken', () => {
    const old = new StandIns([k1])
    const rotated = new StandIns([k2, k1])
    const access = old.access('h', REAL, 2000)
    assert.equal(rotated.checkAccess(access, 'h', 1000), undefined)
    assert.ok(rotated.checkRefresh(old.refresh('h'), 'h'))
    assert.match(rotated.refresh('h'), /^agr\.k2\./)
    // A dropped key's stand-in is still told apart from a real token, by its shape, and refused as retired.
    const dropped = new StandIns([k2])
    assert.ok(dropped.isAccess(access))
    assert.ok(dropped.isRetired(access))
    assert.equal(dropped.checkAccess(access, 'h', 1000), 'retired')
    assert.ok(!rotated.isRetired(access), 'a listed key is not retired')
    for (const id of ['a', 'ab', 'abc', 'k-_9'.repeat(8)]) {
      const other = new StandIns([{ id, key: randomBytes(32) }]).access('h', REAL, 2000)
      assert.ok(dropped.isRetired(other), id)
    }
    // Not a stand-in: a real token, a header naming another kid, a token that only starts alike.
    assert.ok(!dropped.isRetired(REAL))
    const otherKid = `${b64({ alg: 'HS256', typ: 'JWT', kid: 'someone-else' })}.${b64({ sub: 'u' })}.sig`
    assert.ok(!dropped.isAccess(otherKid))
    assert.ok(!dropped.isRetired(`${access.split('.')[0]!.slice(0, 50)}.x.y`))
  })
})
