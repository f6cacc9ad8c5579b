import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { AuthgateConfigError } from '../../src/config/env.ts'
import { newSessionId, parseSessionKeys, SESSION_ID, SessionCipher, sessionHandle } from '../../src/sessions/crypto.ts'

const key = (id: string) => ({ id, key: randomBytes(32) })

describe('session keys', () => {
  it('reads `<id>:<base64>` lists, the first first', () => {
    const a = randomBytes(32)
    const b = randomBytes(32)
    const keys = parseSessionKeys('X', ` k2:${a.toString('base64')} , k1:${b.toString('base64')}`)
    assert.deepEqual(
      keys.map((k) => k.id),
      ['k2', 'k1'],
    )
    assert.ok(keys[0]!.key.equals(a))
  })

  it('refuses a missing id, a short key and an empty list without echoing the key', () => {
    const short = randomBytes(16).toString('base64')
    assert.throws(() => parseSessionKeys('X', randomBytes(32).toString('base64')), AuthgateConfigError)
    assert.throws(
      () => parseSessionKeys('X', `k1:${short}`),
      (err: Error) => err instanceof AuthgateConfigError && !err.message.includes(short),
    )
    assert.throws(() => parseSessionKeys('X', ' , '), /no key given/)
  })
})

describe('session ids', () => {
  it('are 43 base64url characters, never repeated, stored only as a hash', () => {
    const ids = new Set(Array.from({ length: 1000 }, newSessionId))
    assert.equal(ids.size, 1000)
    for (const id of ids) assert.match(id, SESSION_ID)
    const id = newSessionId()
    assert.equal(sessionHandle(id), sessionHandle(id))
    assert.notEqual(sessionHandle(id), id)
    assert.notEqual(sessionHandle(id), sessionHandle(newSessionId()))
  })
})

describe('SessionCipher (AES-256-GCM)', () => {
  it('opens what it sealed, for the same handle only', () => {
    const cipher = new SessionCipher([key('k1')])
    const sealed = cipher.seal('{"a":"token"}', 'handle-1')
    assert.match(sealed, /^k1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/)
    assert.doesNotMatch(sealed, /token/)
    assert.equal(cipher.open(sealed, 'handle-1'), '{"a":"token"}')
    assert.equal(cipher.open(sealed, 'handle-2'), undefined)
    // A fresh IV each time.
    assert.notEqual(cipher.seal('x', 'h'), cipher.seal('x', 'h'))
  })

  it('refuses an altered record and malformed ones', () => {
    const cipher = new SessionCipher([key('k1')])
    const sealed = cipher.seal('secret', 'h')
    const [id, iv, body] = sealed.split('.')
    const flipped = Buffer.from(body!, 'base64url')
    flipped[0] = flipped[0]! ^ 1
    assert.equal(cipher.open(`${id}.${iv}.${flipped.toString('base64url')}`, 'h'), undefined)
    assert.equal(cipher.open(`${sealed}.extra`, 'h'), undefined)
    assert.equal(cipher.open('k1.only', 'h'), undefined)
    assert.equal(cipher.open(`k1.${Buffer.alloc(4).toString('base64url')}.${body}`, 'h'), undefined)
    assert.equal(cipher.open('k1.AAAAAAAAAAAAAAAA.AAAA', 'h'), undefined)
  })

  it('rotation: a record of the old key opens while the old key is listed, and is not current', () => {
    const old = key('old')
    const sealed = new SessionCipher([old]).seal('v', 'h')
    const rotated = new SessionCipher([key('new'), old])
    assert.equal(rotated.open(sealed, 'h'), 'v')
    assert.equal(rotated.isCurrent(sealed), false)
    assert.equal(rotated.isCurrent(rotated.seal('v', 'h')), true)
    // Once the old key is dropped, its records no longer open.
    assert.equal(new SessionCipher([key('new')]).open(sealed, 'h'), undefined)
  })

  it('needs a key', () => {
    assert.throws(() => new SessionCipher([]), TypeError)
  })
})
