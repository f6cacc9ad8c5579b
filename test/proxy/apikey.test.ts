import assert from 'node:assert/strict'
import { test } from 'node:test'
import { withFakeBackend } from '../support/app.ts'

test('AUTHGATE_BACKEND_APIKEY is sent as the one apikey on every backend request', async () => {
  const h = await withFakeBackend({ backendApiKey: 'sb_publishable_project' })
  try {
    await h.app.inject({ method: 'GET', url: '/auth/settings' })
    await h.app.inject({
      method: 'GET',
      url: '/auth/user',
      headers: { apikey: 'from-the-browser', authorization: 'Bearer t' },
    })
    assert.equal(h.backend.requests.length, 2, 'both requests reached the backend')
    for (const r of h.backend.requests) {
      const values = r.rawHeaders.filter((_, i, all) => i % 2 === 1 && all[i - 1]!.toLowerCase() === 'apikey')
      assert.deepEqual(values, ['sb_publishable_project'])
    }
  } finally {
    await h.close()
  }
})

test("without it, the client's apikey is forwarded unchanged", async () => {
  const h = await withFakeBackend()
  try {
    await h.app.inject({ method: 'GET', url: '/auth/settings', headers: { apikey: 'from-the-browser' } })
    assert.equal(h.backend.requests[0]!.headers.apikey, 'from-the-browser')
  } finally {
    await h.close()
  }
})
