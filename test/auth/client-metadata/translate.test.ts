import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formClientId } from '../../../src/auth/client-metadata/translate.ts'

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
