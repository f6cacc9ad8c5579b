import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formClientId } from '../../../src/auth/client-metadata/translate.ts'
import { withFakeBackend } from '../../support/app.ts'

test('the first client_id of a form, as Go reads it, replaced by one while every other pair keeps its bytes', () => {
  const form = 'response_type=code&client_id=https%3A%2F%2Fa.example%2Fc.json&state=a%20b&client_id=second&x=1'
  const found = formClientId(form)!
  assert.equal(found.value, 'https://a.example/c.json')
  assert.equal(found.with('uuid-1'), 'response_type=code&client_id=uuid-1&state=a%20b&x=1')
  // An encoded key is the same key.
  assert.equal(formClientId('client%5Fid=https://a.example/c')!.value, 'https://a.example/c')
  assert.equal(formClientId('a=1&b=2'), undefined)
  assert.equal(formClientId(''), undefined)
  assert.equal(formClientId('client_id=%E0%A4%A'), undefined, 'a malformed value is left to the backend')
})

test('a mapping store that cannot answer is 503 client_metadata_unavailable, and nothing is forwarded', async () => {
  const h = await withFakeBackend(
    {},
    {
      // Nothing listens on port 1: the store never connects.
      clientMetadata: {
        origins: 'any',
        store: { kind: 'redis', url: 'redis://127.0.0.1:1', keyPrefix: 't:', timeoutMs: 200 },
      },
    },
  )
  try {
    const res = await h.app.inject({
      method: 'POST',
      url: '/auth/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=refresh_token&refresh_token=r&client_id=https%3A%2F%2Fapp.example.com%2Fmcp.json',
    })
    assert.equal(res.statusCode, 503)
    assert.equal(res.json().error_code, 'client_metadata_unavailable')
    assert.equal(h.backend.requests.length, 0)
  } finally {
    await h.close()
  }
})
