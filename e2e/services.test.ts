import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { createClient, type SupabaseClient } from '@supabase/supabase-js'
import {
  signApiKey,
  startFunctionsStandIn,
  startPostgrestStandIn,
  startRealtimeStandIn,
  startStorageStandIn,
  type ProjectKeys,
  type RealtimeStandIn,
  type StandIn,
} from './support/service-stand-ins.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'
import { loadRateLimitSettings } from '../src/settings.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

const PUBLISHABLE = 'sb_publishable_e2e_services'
const SECRET = 'sb_secret_e2e_services'
const PASSWORD = 'correct-horse-battery-7'

/**
 * One `createClient` pointed at authgate alone, as a Supabase app does: sign-in against the real
 * Supabase Auth, `from()`, storage and functions against stand-ins that check tokens as the real
 * services do (e2e/support/service-stand-ins.ts; docs/e2e.md labels them).
 */
describe('one createClient for the whole API through authgate', () => {
  let stack: Stack
  let rest: StandIn
  let storage: StandIn
  let functions: StandIn
  let realtime: RealtimeStandIn
  let project: ProjectKeys | undefined
  let anonKey = ''
  let serviceKey = ''
  let supabase: SupabaseClient
  let userId = ''
  const keys = () => project!

  before(async () => {
    if (unavailable !== undefined) return
    rest = await startPostgrestStandIn(keys)
    storage = await startStorageStandIn(keys)
    functions = await startFunctionsStandIn(keys)
    realtime = await startRealtimeStandIn(keys, 'realtime-dev')
    stack = await startStack({
      database: 'authgate_e2e_services',
      prefix: '/auth/v1',
      // As Supabase's own deployments set it: users' tokens carry the `authenticated` role,
      // which PostgREST and Storage switch to.
      extraEnv: { GOTRUE_JWT_DEFAULT_GROUP_NAME: 'authenticated' },
      services: (backend) => {
        project = { jwtSecret: backend.jwtSecret, signingJwk: backend.signingJwk }
        anonKey = signApiKey(backend.jwtSecret, 'anon')
        serviceKey = signApiKey(backend.jwtSecret, 'service_role')
        return {
          urls: { rest: rest.url, storage: storage.url, functions: functions.url, realtime: realtime.url },
          realtimeTenant: 'realtime-dev',
          keys: { anon: anonKey, service: serviceKey, publishable: [PUBLISHABLE], secret: [SECRET] },
        }
      },
    })
    supabase = createClient(stack.url, PUBLISHABLE, {
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    })
  })

  after(async () => {
    await stack?.stop()
    await rest?.close()
    await storage?.close()
    await functions?.close()
    await realtime?.close()
  })

  it('reads as anon with the publishable key, which reached PostgREST as the anon JWT', needsBackend, async () => {
    const { data, error } = await supabase.from('todos').select('*')
    assert.equal(error, null)
    assert.deepEqual(data, [])
    const seen = rest.requests.at(-1)!
    assert.equal(seen.target, '/todos?select=*')
    assert.equal(seen.headers.authorization, `Bearer ${anonKey}`)
    assert.equal(seen.headers.apikey, anonKey)
  })

  it("an anon insert gets PostgREST's row-level security error", needsBackend, async () => {
    const { error, status } = await supabase.from('todos').insert({ title: 'nope' })
    assert.equal(status, 401)
    assert.equal(error?.code, '42501')
  })

  it('signs up and in through the real Supabase Auth on the same origin', needsBackend, async () => {
    const email = 'services@example.com'
    const signUp = await supabase.auth.signUp({ email, password: PASSWORD })
    assert.equal(signUp.error, null)
    await supabase.auth.signOut({ scope: 'local' })
    const { data, error } = await supabase.auth.signInWithPassword({ email, password: PASSWORD })
    assert.equal(error, null)
    userId = data.user!.id
  })

  it(
    "writes and reads the user's own rows with the session's JWT, counts from Content-Range",
    needsBackend,
    async () => {
      const inserted = await supabase.from('todos').insert({ title: 'first' }).select()
      assert.equal(inserted.error, null)
      assert.deepEqual(inserted.data, [{ id: 1, title: 'first', user_id: userId }])
      const { data, count, error } = await supabase.from('todos').select('*', { count: 'exact' })
      assert.equal(error, null)
      assert.equal(data?.length, 1)
      assert.equal(count, 1)
      // The user's token went through untouched: PostgREST saw the session, not the anon key.
      assert.match(rest.requests.at(-1)!.headers.authorization!, /^Bearer eyJ/)
      assert.notEqual(rest.requests.at(-1)!.headers.authorization, `Bearer ${anonKey}`)
    },
  )

  it("PostgREST's error for an unknown table reaches the client as it was sent", needsBackend, async () => {
    const { error, status } = await supabase.from('nope').select()
    assert.equal(status, 404)
    assert.equal(error?.code, 'PGRST205')
  })

  it(
    'uploads and downloads through storage; a write outside the policy is Storage’s 400 with statusCode 403',
    needsBackend,
    async () => {
      const bytes = Buffer.from('hello from authgate\n')
      const up = await supabase.storage.from('docs').upload(`${userId}/note.txt`, bytes, { contentType: 'text/plain' })
      assert.equal(up.error, null)
      assert.equal(up.data?.path, `${userId}/note.txt`)
      const down = await supabase.storage.from('docs').download(`${userId}/note.txt`)
      assert.equal(down.error, null)
      assert.equal(await down.data!.text(), bytes.toString())
      const denied = await supabase.storage.from('docs').upload('someone-else/x.txt', bytes)
      assert.ok(denied.error)
      assert.equal((denied.error as { status?: number }).status, 400)
      assert.equal((denied.error as { statusCode?: string }).statusCode, '403')
    },
  )

  it(
    'a signed URL works with the empty Authorization presigned clients send (Storage itself refuses it)',
    needsBackend,
    async () => {
      const { data, error } = await supabase.storage.from('docs').createSignedUrl(`${userId}/note.txt`, 60)
      assert.equal(error, null)
      assert.ok(data!.signedUrl.startsWith(`${stack.url}/storage/v1/object/sign/`))
      const through = await fetch(data!.signedUrl, { headers: { authorization: '' } })
      assert.equal(through.status, 200)
      assert.equal(await through.text(), 'hello from authgate\n')
      const direct = await fetch(data!.signedUrl.replace(`${stack.url}/storage/v1`, storage.url), {
        headers: { authorization: '' },
      })
      assert.equal(direct.status, 400)
      assert.equal((await direct.json()).statusCode, '403')
    },
  )

  it('invokes a function with the user’s JWT; the key travels in sb-api-key', needsBackend, async () => {
    const { data, error } = await supabase.functions.invoke('hello', { body: { name: 'Ada' } })
    assert.equal(error, null)
    assert.deepEqual(data, { message: 'Hello Ada', role: 'authenticated' })
    const seen = functions.requests.at(-1)!
    assert.equal(seen.target, '/hello')
    assert.equal(seen.headers['sb-api-key'], anonKey)
  })

  it(
    'subscribes to a Realtime channel over the socket authgate relays, and receives its broadcast',
    needsBackend,
    async () => {
      const channel = supabase.channel('room')
      const received = new Promise<unknown>((resolve) => {
        channel.on('broadcast', { event: 'hello' }, (message) => resolve(message.payload))
      })
      const status = await new Promise<string>((resolve) => channel.subscribe((s) => resolve(s)))
      assert.equal(status, 'SUBSCRIBED')
      assert.deepEqual(await received, { from: 'realtime' })
      const handshake = realtime.handshakes.at(-1)!
      assert.match(handshake.target, /^\/socket\/websocket\?apikey=[^&]+&vsn=2\.0\.0$/)
      assert.equal(handshake.headers['x-api-key'], anonKey)
      assert.equal(handshake.headers.host, 'realtime-dev')
      // The join carried the user's token, which the stand-in verified as Realtime does.
      const join = realtime.messages.find((m) => m[3] === 'phx_join')!
      assert.match(String((join[4] as { access_token?: string }).access_token), /^eyJ/)
      await supabase.removeAllChannels()
    },
  )

  it(
    'a client with a key the project does not have is refused by authgate (401 invalid_api_key)',
    needsBackend,
    async () => {
      const stranger = createClient(stack.url, 'sb_publishable_unknown', {
        auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
      })
      const before = rest.requests.length
      const { error, status } = await stranger.from('todos').select()
      assert.equal(status, 401)
      assert.equal(error?.message, 'Invalid API key')
      assert.equal(rest.requests.length, before)
    },
  )

  it(
    "the document shows PostgREST's tables beside the auth routes, fetched from the stand-in with the service key",
    needsBackend,
    async () => {
      const doc = await (await fetch(`${stack.url}/openapi.json`)).json()
      assert.deepEqual(doc.paths['/rest/v1/todos'].get.tags, ['Database (PostgREST)'])
      assert.ok(doc.paths['/auth/v1/signup'])
      const asked = rest.requests.find((r) => r.target === '/')!
      assert.equal(asked.headers.authorization, `Bearer ${serviceKey}`)
    },
  )

  it('the secret key reads every row as the service role', needsBackend, async () => {
    const admin = createClient(stack.url, SECRET, {
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    })
    const { data, error } = await admin.from('todos').select()
    assert.equal(error, null)
    assert.equal(data?.length, 1)
    assert.equal(rest.requests.at(-1)!.headers.authorization, `Bearer ${serviceKey}`)
  })
})

describe('per-user limits with cookie sessions, against the real Supabase Auth', () => {
  let stack: Stack
  let rest: StandIn
  let project: ProjectKeys | undefined

  before(async () => {
    if (unavailable !== undefined) return
    rest = await startPostgrestStandIn(() => project!)
    stack = await startStack({
      database: 'authgate_e2e_services_user_limits',
      prefix: '/auth/v1',
      extraEnv: { GOTRUE_JWT_DEFAULT_GROUP_NAME: 'authenticated' },
      sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }] },
      rateLimit: loadRateLimitSettings({ AUTHGATE_RATE_LIMITED_ROUTES: 'none' }),
      services: (backend) => {
        project = { jwtSecret: backend.jwtSecret, signingJwk: backend.signingJwk }
        return {
          urls: { rest: rest.url },
          keys: {
            anon: signApiKey(backend.jwtSecret, 'anon'),
            service: signApiKey(backend.jwtSecret, 'service_role'),
            publishable: [PUBLISHABLE],
            secret: [SECRET],
          },
          userRateLimitRoutes: 'GET /rest/v1/*=2/1m',
        }
      },
    })
  })
  after(async () => {
    await stack?.stop()
    await rest?.close()
  })

  it('a stand-in spends the bucket of the user whose token Supabase Auth signed', needsBackend, async () => {
    const signUp = async (email: string) => {
      const up = await fetch(`${stack.url}/auth/v1/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', apikey: PUBLISHABLE },
        body: JSON.stringify({ email, password: PASSWORD }),
      })
      assert.equal(up.status, 200)
      const cookie = up.headers
        .getSetCookie()
        .find((c) => c.includes('authgate-session='))!
        .split(';')[0]!
      return { cookie, standIn: ((await up.json()) as { access_token: string }).access_token }
    }
    const ada = await signUp(`ada-${Date.now()}@example.com`)
    const grace = await signUp(`grace-${Date.now()}@example.com`)
    const todos = (who: { cookie: string; standIn: string }) =>
      fetch(`${stack.url}/rest/v1/todos`, {
        headers: { apikey: PUBLISHABLE, authorization: `Bearer ${who.standIn}`, cookie: who.cookie },
      })
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) {
      const res = await todos(ada)
      statuses.push(res.status)
      await res.body?.cancel()
    }
    assert.deepEqual(statuses, [200, 200, 429])
    const other = await todos(grace)
    assert.equal(other.status, 200, 'another user, another bucket')
    await other.body?.cancel()
    // PostgREST got the real tokens, never a stand-in.
    const reached = rest.requests.filter((r) => r.target.startsWith('/todos'))
    assert.equal(reached.length, 3)
    for (const r of reached)
      assert.ok(!stack.app.authgate.sessions!.sessions.standIns.isAccess(String(r.headers.authorization).slice(7)))
  })
})
