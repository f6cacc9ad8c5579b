import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { afterBackendLogged, loggedRequests } from './support/backend-requests.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

/**
 * The response cache in front of the real backend: what Supabase Auth marks cacheable (the
 * discovery documents and keys, `public, max-age=600`) and `/settings` (no Cache-Control: the
 * configured TTL) are answered by authgate while fresh; Supabase Auth's own log proves it.
 */
describe('response cache in front of the real backend', () => {
  let stack: Stack
  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_cache', extraEnv: { GOTRUE_LOG_LEVEL: 'info' } })
  })
  after(async () => {
    await stack?.stop()
  })

  const served = (path: string) => loggedRequests(stack.backend.logs()).filter((r) => r.path === path).length
  // Supabase Auth logs requests in order: once a request it cannot have from the cache (GET /user
  // with a bad token) is in its log, everything sent before it is too.
  const barrier = () =>
    afterBackendLogged(
      stack.backend.logs,
      (r) => r.path === '/user',
      async () => {
        await (await fetch(`${stack.url}/auth/user`, { headers: { authorization: 'Bearer x' } })).body?.cancel()
      },
    )

  for (const path of ['/settings', '/.well-known/jwks.json', '/.well-known/oauth-authorization-server']) {
    it(
      `GET ${path} reaches Supabase Auth once, then is answered from the cache with the same body`,
      needsBackend,
      async () => {
        const first = await fetch(`${stack.url}/auth${path}`)
        const firstBody = await first.text()
        const second = await fetch(`${stack.url}/auth${path}`)
        const secondBody = await second.text()
        assert.equal(second.status, first.status)
        assert.equal(secondBody, firstBody)
        assert.equal(second.headers.get('content-type'), first.headers.get('content-type'))
        await barrier()
        assert.equal(served(path), 1, `${path} reached the backend ${served(path)} times`)
      },
    )
  }

  it('a request with a bearer token is never answered from the cache', needsBackend, async () => {
    const before = served('/settings')
    const res = await fetch(`${stack.url}/auth/settings`, { headers: { authorization: 'Bearer x' } })
    await res.body?.cancel()
    await barrier()
    assert.equal(served('/settings'), before + 1)
  })
})
