import assert from 'node:assert/strict'
import { test } from 'node:test'
import { backendClientId, formClientId } from '../../../src/auth/client-metadata/translate.ts'
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

test("a document's redirect_uri and client_id are read as Supabase Auth reads the query", async () => {
  const h = await withFakeBackend({}, { clientMetadata: { origins: 'any' } })
  const DOC = 'https://app.example.com/mcp.json'
  const UUID = '00000000-0000-4000-8000-000000000001'
  // The registry's answer for the document, without fetching it: only the query's reading is tried here.
  const registry = {
    resolve: async () => ({ ok: true, id: UUID, document: { redirectUris: ['https://app.example.com/cb'] } }),
  }
  ;(h.app.authgate as { clientMetadata: unknown }).clientMetadata = registry
  const authorize = (query: string) =>
    h.app.inject({ method: 'GET', url: `/auth/oauth/authorize?response_type=code&${query}` })
  try {
    const client = `client_id=${encodeURIComponent(DOC)}`
    // Go drops a pair holding `;` or a bad escape: the redirect_uri it reads is the document's.
    for (const redirect of ['redirect_uri=https://evil.example/cb;&', 'redirect_uri=%zz&', 'redirect_uri;=x&']) {
      h.backend.requests.length = 0
      const res = await authorize(`${client}&${redirect}redirect_uri=https://app.example.com/cb`)
      assert.equal(res.statusCode, 200, `${redirect}: ${res.body}`)
      assert.equal(h.backend.requests.length, 1)
      assert.match(h.backend.requests[0]!.target, new RegExp(`client_id=${UUID}`))
    }
    // And the other way: the first redirect_uri Go reads is not the document's, whatever comes after.
    for (const query of [
      'redirect_uri=https://evil.example/cb&redirect_uri=https://app.example.com/cb',
      'redirect%5Furi=https://evil.example/cb',
      'redirect_uri=https://app.example.com/cb;&redirect_uri=https://evil.example/cb',
    ]) {
      h.backend.requests.length = 0
      const res = await authorize(`${client}&${query}`)
      assert.equal(res.statusCode, 400, query)
      assert.match(res.json().msg, /redirect_uri/)
      assert.equal(h.backend.requests.length, 0)
    }
    // A client_id pair Go drops is no client_id: the next one is the document's URL, and translated.
    h.backend.requests.length = 0
    const res = await authorize(`client_id=x;&${client}&redirect_uri=https://app.example.com/cb`)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(
      h.backend.requests[0]!.target,
      `/oauth/authorize?response_type=code&client_id=x;&client_id=${UUID}&redirect_uri=https://app.example.com/cb`,
    )
  } finally {
    await h.close()
  }
})

test('a client id is read in every spelling Supabase Auth’s UUID parser takes, to its canonical form', () => {
  const id = '6ba7b810-9dad-11d1-80b4-00c04fd430c8'
  const hex = id.replaceAll('-', '')
  for (const spelling of [
    id,
    id.toUpperCase(),
    hex,
    hex.toUpperCase(),
    `{${id}}`,
    `{${hex}}`,
    `urn:uuid:${id}`,
    `URN:UUID:${hex}`,
  ])
    assert.equal(backendClientId(spelling), id, spelling)
  for (const other of [
    '',
    'https://client.example/doc.json',
    `${id}x`,
    `{${id}`,
    `urn:uuid:{${id}}`,
    id.replace('-', ''),
    `6ba7b810-9dad-11d1-80b4-00c04fd430cg`,
  ])
    assert.equal(backendClientId(other), undefined, other)
})
