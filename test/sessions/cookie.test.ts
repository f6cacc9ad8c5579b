import assert from 'node:assert/strict'
import { describe, it, test } from 'node:test'
import { clearedCookie, sessionCookie, sessionIdFrom, withoutCookie } from '../../src/sessions/cookie.ts'
import { newSessionId } from '../../src/sessions/crypto.ts'

const settings = { name: '__Host-authgate-session', secure: true }

describe('the session cookie', () => {
  it('is HttpOnly, Secure, SameSite=Lax, Path=/, without Domain, under 200 bytes', () => {
    const id = newSessionId()
    const header = sessionCookie(settings, id, 7 * 24 * 3600)
    assert.equal(header, `__Host-authgate-session=${id}; Path=/; Max-Age=604800; HttpOnly; Secure; SameSite=Lax`)
    assert.ok(header.length < 200)
    assert.doesNotMatch(header, /Domain/i)
  })

  it('without Secure for plain-http development', () => {
    assert.doesNotMatch(sessionCookie({ name: 'sid', secure: false }, 'x', 1), /Secure/)
  })

  it('is cleared with an empty value and Max-Age=0', () => {
    assert.match(
      clearedCookie(settings),
      /^__Host-authgate-session=; Path=\/; Max-Age=0; HttpOnly; Secure; SameSite=Lax$/,
    )
    assert.match(sessionCookie(settings, 'x', -5), /Max-Age=0/)
  })

  it('is read from the Cookie header only when it has the shape of an id', () => {
    const id = newSessionId()
    assert.equal(sessionIdFrom(`a=1; __Host-authgate-session=${id}; b=2`, settings.name), id)
    assert.equal(sessionIdFrom(`__Host-authgate-session=${id}`, settings.name), id)
    assert.equal(sessionIdFrom(undefined, settings.name), undefined)
    assert.equal(sessionIdFrom('', settings.name), undefined)
    assert.equal(sessionIdFrom('a=1; flag', settings.name), undefined)
    assert.equal(sessionIdFrom('__Host-authgate-session=short', settings.name), undefined)
    assert.equal(sessionIdFrom(`x__Host-authgate-session=${id}`, settings.name), undefined)
  })

  it('two cookies of the name: neither is trusted', () => {
    const header = `__Host-authgate-session=${newSessionId()}; __Host-authgate-session=${newSessionId()}`
    assert.equal(sessionIdFrom(header, settings.name), undefined)
  })
})

test('withoutCookie takes out the named cookie and keeps the others as written', () => {
  assert.equal(withoutCookie('a=1; sid=x; b=2', 'sid'), 'a=1; b=2')
  assert.equal(withoutCookie('sid=x; b=2', 'sid'), 'b=2')
  assert.equal(withoutCookie('a=1;sid=x', 'sid'), 'a=1')
  assert.equal(withoutCookie('sid=x', 'sid'), undefined)
  assert.equal(withoutCookie('sid=x; sid=y', 'sid'), undefined, 'every cookie of the name')
  assert.equal(withoutCookie('sid_other=1; a=sid', 'sid'), 'sid_other=1; a=sid', 'a name that only starts the same')
  assert.equal(withoutCookie('a=1;  b=2', 'sid'), 'a=1;  b=2', 'untouched when the name is absent')
})
