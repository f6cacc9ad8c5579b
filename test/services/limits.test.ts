import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AuthgateConfigError } from '../../src/config/env.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'
import { PUBLISHABLE, withServices } from './support.ts'

const limited = (routes: string) =>
  loadRateLimitSettings({ AUTHGATE_RATE_LIMITED_ROUTES: 'none', AUTHGATE_RATE_LIMIT_ROUTES: routes })

test('a service route limited per client: its methods share one bucket, refusals in our shape, other services untouched', async () => {
  const h = await withServices({}, {}, { rateLimit: limited('GET /rest/v1/*=2/1m,POST /rest/v1/*=2/1m') })
  try {
    const get = () =>
      fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE, 'x-supabase-api-version': '2023-01-01' } })
    const first = await get()
    assert.equal(first.status, 200)
    assert.match(first.headers.get('ratelimit-policy')!, /^"rest-v1";q=2;w=60/)
    assert.equal((await get()).status, 200)
    const post = await fetch(`${h.url}/rest/v1/todos`, {
      method: 'POST',
      headers: { apikey: PUBLISHABLE, 'content-type': 'application/json' },
      body: '{}',
    })
    assert.equal(post.status, 429, 'the POST draws on the bucket the GETs emptied')
    const refused = await get()
    assert.equal(refused.status, 429)
    assert.ok(Number(refused.headers.get('retry-after')) > 0)
    // postgrest-js reads `message`: the legacy shape is never sent on a service route (D74).
    assert.deepEqual(await refused.json(), {
      code: 'over_request_rate_limit',
      message: 'Request rate limit reached',
    })
    assert.equal(h.upstream.requests.filter((r) => r.target.startsWith('/rest/')).length, 2)
    // The service's version header went on as the client sent it.
    assert.equal(h.upstream.requests[0]!.headers['x-supabase-api-version'], '2023-01-01')
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${h.url}/storage/v1/object/public/b/f`)).status, 200)
    const text = await (await fetch(`${h.url}/metrics`)).text()
    assert.match(text, /authgate_rate_limit_denied_total\{limit="client",route="GET \/rest\/v1\/\*"\} 1/)
    assert.match(text, /authgate_rate_limit_denied_total\{limit="client",route="POST \/rest\/v1\/\*"\} 1/)
  } finally {
    await h.close()
  }
})

test('service routes in AUTHGATE_RATE_LIMIT_ROUTES are checked like the auth routes', () => {
  assert.equal(limited('DELETE /storage/v1/*=10/1s').routes.get('DELETE /storage/v1/*')?.limit, 10)
  assert.equal(limited('GET /graphql/v1=10/1s').routes.size, 1)
  assert.throws(() => limited('GET /rest/v1/todos=10/1s'), AuthgateConfigError, 'a table, not the route')
  assert.throws(
    () => limited('GET /rest/v1/*=10/1s,POST /rest/v1/*=5/1s'),
    /share one bucket \(same template\) and need the same rate/,
  )
})
