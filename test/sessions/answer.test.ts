import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { splitSessionAnswer, splitSessionRedirect } from '../../src/sessions/answer.ts'

const json = (v: unknown) => Buffer.from(JSON.stringify(v))
const jwt = (payload: object) => `e30.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.sig`

describe('splitting a session answer', () => {
  it('keeps the tokens and gives the page everything else', () => {
    const split = splitSessionAnswer(
      json({
        access_token: 'at',
        refresh_token: 'rt',
        provider_token: 'pt',
        provider_refresh_token: 'prt',
        token_type: 'bearer',
        expires_in: 3600,
        expires_at: 1800000000,
        user: { id: 'u1' },
        weak_password: null,
      }),
    )
    assert.ok(split)
    assert.deepEqual(split.tokens, { accessToken: 'at', refreshToken: 'rt', expiresAt: 1800000000, user: { id: 'u1' } })
    assert.deepEqual(split.page, {
      token_type: 'bearer',
      expires_in: 3600,
      expires_at: 1800000000,
      user: { id: 'u1' },
      weak_password: null,
    })
  })

  it('the expiry from expires_in, else the token, else now', () => {
    const now = 1_700_000_000_000
    assert.equal(
      splitSessionAnswer(json({ access_token: 'a', refresh_token: 'r', expires_in: 60 }), now)?.tokens.expiresAt,
      1_700_000_060,
    )
    assert.equal(
      splitSessionAnswer(json({ access_token: jwt({ exp: 1_700_000_100 }), refresh_token: 'r' }), now)?.tokens
        .expiresAt,
      1_700_000_100,
    )
    assert.equal(
      splitSessionAnswer(json({ access_token: jwt({}), refresh_token: 'r' }), now)?.tokens.expiresAt,
      1_700_000_000,
    )
    assert.equal(
      splitSessionAnswer(json({ access_token: 'x.%%%.y', refresh_token: 'r' }), now)?.tokens.expiresAt,
      1_700_000_000,
    )
    assert.equal(splitSessionAnswer(json({ access_token: 'a', refresh_token: 'r' }), now)?.tokens.user, null)
  })

  it('anything else is no session answer', () => {
    assert.equal(splitSessionAnswer(Buffer.from('not json')), undefined)
    assert.equal(splitSessionAnswer(json([1])), undefined)
    assert.equal(splitSessionAnswer(json(null)), undefined)
    assert.equal(splitSessionAnswer(json({ id: 'user-awaiting-confirmation' })), undefined)
    assert.equal(splitSessionAnswer(json({ access_token: 'a', refresh_token: '' })), undefined)
    assert.equal(splitSessionAnswer(json({ access_token: 'a' })), undefined)
  })
})

describe('splitting a session redirect', () => {
  it('keeps the tokens and the rest of the fragment', () => {
    const split = splitSessionRedirect(
      'https://app.example.com/welcome?x=1#access_token=at&expires_at=1800000000&expires_in=3600&refresh_token=rt&token_type=bearer&type=magiclink&provider_token=pt',
    )
    assert.ok(split)
    assert.deepEqual(split.tokens, { accessToken: 'at', refreshToken: 'rt', expiresAt: 1800000000, user: null })
    assert.equal(
      split.location,
      'https://app.example.com/welcome?x=1#expires_at=1800000000&expires_in=3600&token_type=bearer&type=magiclink',
    )
  })

  it('expires_in when there is no expires_at; nothing left: no fragment', () => {
    const split = splitSessionRedirect(
      'https://a.example.com/#access_token=at&refresh_token=rt&expires_in=60',
      1_700_000_000_000,
    )
    assert.equal(split?.tokens.expiresAt, 1_700_000_060)
    assert.equal(split?.location, 'https://a.example.com/#expires_in=60')
    assert.equal(
      splitSessionRedirect('https://a.example.com/#access_token=at&refresh_token=rt')?.location,
      'https://a.example.com/',
    )
  })

  it('a redirect without a session is none', () => {
    assert.equal(splitSessionRedirect('https://a.example.com/?code=abc'), undefined)
    assert.equal(splitSessionRedirect('https://a.example.com/#error=access_denied'), undefined)
    assert.equal(splitSessionRedirect('https://a.example.com/#access_token=at'), undefined)
  })
})
