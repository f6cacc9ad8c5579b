import assert from 'node:assert/strict'
import { test } from 'node:test'
import { clientIdUrlProblem, validateClientDocument } from '../../../src/auth/client-metadata/document.ts'

const URL_ = 'https://app.example.com/mcp/client.json'

test('a client ID URL is https, has a path, no credentials, fragment or dot segments, and is written normalised', () => {
  assert.equal(clientIdUrlProblem(URL_), undefined)
  assert.equal(clientIdUrlProblem('https://app.example.com:8443/c?v=1'), undefined)
  assert.match(clientIdUrlProblem('http://app.example.com/c')!, /https/)
  assert.match(clientIdUrlProblem('https://app.example.com/')!, /no path/)
  assert.match(clientIdUrlProblem('https://app.example.com')!, /no path|normalised/)
  assert.match(clientIdUrlProblem('https://u:p@app.example.com/c')!, /user name/)
  assert.match(clientIdUrlProblem('https://app.example.com/c#x')!, /fragment/)
  assert.match(clientIdUrlProblem('https://app.example.com/a/../c')!, /dot segment/)
  assert.match(clientIdUrlProblem('https://app.example.com/a/%2e%2e/c')!, /dot segment/)
  assert.match(clientIdUrlProblem('https://APP.example.com/c')!, /normalised/)
  assert.match(clientIdUrlProblem('not a url')!, /not a URL/)
})

test('a document names its own URL, a public client and its redirect URIs', () => {
  const ok = validateClientDocument(URL_, {
    client_id: URL_,
    client_name: 'App',
    redirect_uris: ['https://app.example.com/cb'],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  })
  assert.deepEqual(ok, {
    ok: true,
    document: { clientId: URL_, clientName: 'App', redirectUris: ['https://app.example.com/cb'] },
  })
  // The method defaults to none: a document is a public client.
  assert.equal(validateClientDocument(URL_, { client_id: URL_, redirect_uris: ['https://a.example/cb'] }).ok, true)
})

test('documents authgate refuses, each for its reason', () => {
  const base = { client_id: URL_, redirect_uris: ['https://app.example.com/cb'] }
  const cases: Array<[unknown, RegExp]> = [
    [[], /not a JSON object/],
    [{ ...base, client_id: 'https://app.example.com/other.json' }, /not its own URL/],
    [{ ...base, client_id: URL_ + '/' }, /not its own URL/],
    [{ ...base, client_secret: 's' }, /secret/],
    [{ ...base, client_secret_expires_at: 0 }, /secret/],
    [{ ...base, token_endpoint_auth_method: 'client_secret_basic' }, /shared secret/],
    [{ ...base, token_endpoint_auth_method: 'client_secret_post' }, /shared secret/],
    [{ ...base, token_endpoint_auth_method: 'private_key_jwt' }, /not supported/],
    [{ ...base, redirect_uris: [] }, /redirect_uris/],
    [{ ...base, redirect_uris: 'https://a/cb' }, /redirect_uris/],
    [{ ...base, redirect_uris: Array.from({ length: 11 }, (_, i) => `https://a.example/${i}`) }, /at most 10/],
    [{ ...base, grant_types: ['client_credentials'] }, /grant_types/],
    [{ ...base, response_types: ['token'] }, /response_types/],
    [{ ...base, client_name: 'x'.repeat(1025) }, /client_name/],
  ]
  for (const [body, reason] of cases) {
    const result = validateClientDocument(URL_, body)
    assert.equal(result.ok, false, JSON.stringify(body).slice(0, 80))
    assert.match((result as { reason: string }).reason, reason)
  }
})
