import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { decodedBasicCredentials } from '../../src/auth/client-credentials.ts'
import { withFakeBackend, type Harness } from '../support/app.ts'

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`
// What RFC 6749 §2.3.1 clients send: each part form-encoded first (oauth4webapi encodes `-` too).
const formEncode = (s: string) => encodeURIComponent(s).replace(/-/g, '%2D').replace(/%20/g, '+')

const ID = '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60'
const SECRET = 'sb_secret-a b:c/d%'

describe('HTTP Basic client credentials (RFC 6749 §2.3.1)', () => {
  it('decodes form-encoded id and secret into the raw header Supabase Auth reads', () => {
    assert.equal(decodedBasicCredentials(basic(formEncode(ID), formEncode(SECRET))), basic(ID, SECRET))
    // Already raw, not Basic, or malformed: left as it is.
    assert.equal(decodedBasicCredentials(basic(ID, 'plain')), undefined)
    assert.equal(decodedBasicCredentials('Bearer abc'), undefined)
    assert.equal(decodedBasicCredentials(basic('a%zz', 'x')), undefined)
    assert.equal(decodedBasicCredentials(undefined), undefined)
  })

  it('leaves an id holding a colon as sent: the backend splits the header at its first colon', () => {
    // Decoded, `a%3Ab:client` would be sent as `a:b:client`, which reads as the id `a`.
    assert.equal(decodedBasicCredentials(basic('a%3Ab', 'client')), undefined)
    assert.equal(decodedBasicCredentials(basic('a', 'b%3Ac')), basic('a', 'b:c'))
  })

  describe('POST /oauth/token through authgate', () => {
    let h: Harness
    before(async () => {
      h = await withFakeBackend()
    })
    after(async () => {
      await h.close()
    })

    it('forwards the decoded credentials, the body untouched', async () => {
      const payload = 'grant_type=refresh_token&refresh_token=r1'
      const res = await h.app.inject({
        method: 'POST',
        url: '/auth/oauth/token',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basic(formEncode(ID), formEncode(SECRET)),
        },
        payload,
      })
      assert.equal(res.statusCode, 200)
      const sent = h.backend.requests.at(-1)!
      assert.equal(sent.headers.authorization, basic(ID, SECRET))
      assert.equal(sent.rawHeaders.filter((n) => n.toLowerCase() === 'authorization').length, 1)
      assert.equal(sent.body.toString(), payload)
    })
  })
})
