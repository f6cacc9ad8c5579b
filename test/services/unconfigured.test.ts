import assert from 'node:assert/strict'
import { test } from 'node:test'
import { withFakeBackend } from '../support/app.ts'
import { withServices } from './support.ts'

test("Auth only (prefix /auth/v1): every other service's path says which upstream is not configured, nothing is forwarded", async () => {
  const h = await withFakeBackend({ prefix: '/auth/v1' }, { answerUnrouted: true })
  try {
    const cases: Array<[string, string, RegExp]> = [
      [
        'GET',
        '/rest/v1/todos?select=*',
        /PostgREST is not configured: .* \/rest\/v1 .*set AUTHGATE_REST_URL, or AUTHGATE_SUPABASE_URL/,
      ],
      ['POST', '/graphql/v1', /GraphQL \(PostgREST\) is not configured: .*set AUTHGATE_REST_URL/],
      ['POST', '/storage/v1/object/list/avatars', /Storage is not configured: .*AUTHGATE_STORAGE_URL/],
      ['POST', '/functions/v1/hello', /Edge Functions is not configured: .*AUTHGATE_FUNCTIONS_URL/],
      [
        'GET',
        '/realtime/v1/websocket?apikey=k',
        /Realtime is not configured: .*\/realtime\/v1 .*AUTHGATE_REALTIME_URL/,
      ],
      ['GET', '/realtime/v1/api/ping', /Realtime is not configured/],
      ['GET', '/pg/tables', /pg-meta is not configured: .*set AUTHGATE_META_URL; hosted projects do not offer it/],
    ]
    for (const [method, url, message] of cases) {
      // No API-version header: the services' clients read `message`, so that is the shape (D74).
      const res = await h.app.inject({ method, url })
      assert.equal(res.statusCode, 404, url)
      const body = res.json<{ code: string; message: string }>()
      assert.equal(body.code, 'not_found', url)
      assert.match(body.message, new RegExp(`^No route for ${method} ${url.split('?')[0]!.replaceAll('/', '\\/')}: `))
      assert.match(body.message, message, url)
    }
    // A path that only starts like a service's is a plain 404; so is one that is no service's.
    for (const url of ['/restful', '/rest/v10/x', '/nothing']) {
      const res = await h.app.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 404, url)
      assert.doesNotMatch(res.body, /not configured/, url)
    }
    assert.equal(h.backend.requests.length, 0)
  } finally {
    await h.close()
  }
})

test('a mounted service answers for itself; only the ones left out say they are not configured', async () => {
  const h = await withServices({ urls: { storage: undefined, meta: undefined } }, {}, { answerUnrouted: true })
  try {
    const rest = await fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: 'sb_publishable_abc123' } })
    assert.equal(rest.status, 200)
    const storage = await fetch(`${h.url}/storage/v1/object/public/a.png`)
    assert.equal(storage.status, 404)
    assert.match(((await storage.json()) as { message: string }).message, /Storage is not configured/)
    // Realtime is mounted: a path of it that no row serves is the plain 404.
    const other = await fetch(`${h.url}/realtime/v1/other`)
    assert.equal(other.status, 404)
    assert.doesNotMatch(await other.text(), /not configured/)
  } finally {
    await h.close()
  }
})
