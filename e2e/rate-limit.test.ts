import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { GoTrueClient } from '@supabase/auth-js'
import { afterBackendLogged, loggedRequests } from './support/backend-requests.ts'
import { startGatewayProcess, type GatewayProcess } from './support/gateway-process.ts'
import { decodeJws } from './support/jws.ts'
import { postgresTarget, runPsql } from '../scripts/supabase-auth/postgres.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

const EMAIL = 'limited@example.com'
const PASSWORD = 'correct-horse-battery-5'
const CLIENT_IP = '198.51.100.23'
const OTHER_CLIENT_IP = '198.51.100.77'
const PORTED_CLIENT_IP = '198.51.100.88'
// The left-most entry is what Supabase Auth would pick from a raw header; a client can write it.
const SPOOFED_IP = '203.0.113.9'

/**
 * The standalone service, configured by environment only, with a burst of 2 on POST /token and
 * this test's loopback connection as the trusted proxy. Supabase Auth logs every request it
 * serves (GOTRUE_LOG_LEVEL=info): that log is the proof of what reached it.
 */
describe('rate limiting and client IP in front of the real backend (authgate as a service)', () => {
  let backend: SupabaseAuthServer
  let gateway: GatewayProcess
  let userId = ''

  before(async () => {
    if (unavailable !== undefined) return
    const { port, release } = await reservePort()
    backend = await startSupabaseAuth({
      publicUrl: `http://localhost:${port}/auth`,
      database: 'authgate_e2e_rate_limit',
      extraEnv: { GOTRUE_LOG_LEVEL: 'info' },
    })
    await release()
    gateway = await startGatewayProcess({
      port,
      backendUrl: backend.url,
      env: {
        AUTHGATE_TRUSTED_PROXIES: '127.0.0.1/32,::1/128',
        AUTHGATE_RATE_LIMIT: '2/1m',
        AUTHGATE_RATE_LIMITED_ROUTES: 'POST /token',
      },
    }).catch(async (error: unknown) => {
      await backend.stop()
      throw error
    })
    const response = await fetch(`${gateway.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    })
    assert.equal(response.status, 200)
    userId = ((await response.json()) as { user: { id: string } }).user.id
  })

  after(async () => {
    await gateway?.stop()
    await backend?.stop()
  })

  function signIn(forwardedFor: string): Promise<Response> {
    return fetch(`${gateway.url}/auth/token?grant_type=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    })
  }

  async function sessionIp(accessToken: string): Promise<string> {
    const sessionId = decodeJws(accessToken).payload.session_id
    assert.match(String(sessionId), /^[0-9a-f-]{36}$/)
    return runPsql(
      postgresTarget(),
      backend.database,
      `SELECT host(ip) FROM auth.sessions WHERE id = '${String(sessionId)}'`,
    )
  }

  const tokenRequests = () => loggedRequests(backend.logs()).filter((request) => request.path === '/token').length
  const sessions = async () =>
    Number(
      await runPsql(
        postgresTarget(),
        backend.database,
        `SELECT count(*) FROM auth.sessions WHERE user_id = '${userId}'`,
      ),
    )

  it(
    'Supabase Auth records the client IP authgate derived (right-most untrusted X-Forwarded-For)',
    needsBackend,
    async () => {
      const response = await signIn(`${SPOOFED_IP}, ${CLIENT_IP}`)
      assert.equal(response.status, 200)
      const session = (await response.json()) as { access_token: string }
      assert.equal(await sessionIp(session.access_token), CLIENT_IP)
    },
  )

  it(
    'a proxy that writes the client with its port (Azure Application Gateway): Supabase Auth records the address',
    needsBackend,
    async () => {
      // Go's net.ParseIP refuses `IP:port`: Supabase Auth would record authgate's own address.
      const response = await signIn(`${SPOOFED_IP}, ${PORTED_CLIENT_IP}:40000`)
      assert.equal(response.status, 200)
      const session = (await response.json()) as { access_token: string }
      assert.equal(await sessionIp(session.access_token), PORTED_CLIENT_IP)
    },
  )

  it('answers the third sign-in 429 itself; Supabase Auth never sees it', needsBackend, async () => {
    const requestsBefore = tokenRequests()
    const sessionsBefore = await sessions()

    const second = await signIn(`${SPOOFED_IP}, ${CLIENT_IP}`)
    assert.equal(second.status, 200)
    await second.body?.cancel()

    const third = await signIn(`${SPOOFED_IP}, ${CLIENT_IP}`)
    assert.equal(third.status, 429)
    const body = (await third.json()) as { code?: unknown; error_code?: unknown; msg?: unknown }
    assert.equal(body.code, 429)
    assert.equal(body.error_code, 'over_request_rate_limit')
    assert.equal(typeof body.msg, 'string')
    assert.match(third.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
    assert.match(third.headers.get('ratelimit-policy') ?? '', /;q=2;w=60\b/)
    assert.equal(third.headers.get('x-sb-error-code'), 'over_request_rate_limit')

    // Everything the backend received before the barrier is in its log once the barrier is. A
    // query of its own keeps the barrier out of authgate's response cache for /settings.
    await afterBackendLogged(
      backend.logs,
      (request) => request.path === '/settings',
      async () => {
        const barrier = await fetch(`${gateway.url}/auth/settings?barrier=${Date.now()}`)
        await barrier.body?.cancel()
      },
    )
    assert.equal(tokenRequests() - requestsBefore, 1, 'only the second sign-in may reach Supabase Auth')
    assert.equal((await sessions()) - sessionsBefore, 1, 'the limited sign-in must not create a session')
  })

  it('limits per derived client: another client IP still signs in, and is recorded as such', needsBackend, async () => {
    const response = await signIn(`${SPOOFED_IP}, ${OTHER_CLIENT_IP}`)
    assert.equal(response.status, 200)
    const session = (await response.json()) as { access_token: string }
    assert.equal(await sessionIp(session.access_token), OTHER_CLIENT_IP)
  })

  it("auth-js sees the gateway's 429 as over_request_rate_limit", needsBackend, async () => {
    // No X-Forwarded-For: the client is the trusted loopback peer itself, a bucket of its own.
    const client = new GoTrueClient({ url: `${gateway.url}/auth`, persistSession: false, autoRefreshToken: false })
    const results = []
    for (let attempt = 0; attempt < 3; attempt++) {
      const { error } = await client.signInWithPassword({ email: EMAIL, password: PASSWORD })
      results.push(error === null ? 'ok' : `${error.status} ${error.code}`)
    }
    assert.deepEqual(results, ['ok', 'ok', '429 over_request_rate_limit'])
  })
})
