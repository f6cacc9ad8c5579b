import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import { decodeJwt } from 'jose'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterBackendLogged, loggedRequests } from './support/backend-requests.ts'
import { chromiumUnavailableReason, launchChromium } from './support/chromium.ts'
import { maskedTextFrame } from '../src/sessions/socket-swap.ts'
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

const unavailable = (await backendUnavailableReason()) ?? (await chromiumUnavailableReason())
const PUBLISHABLE = 'sb_publishable_e2e_phantom'
const PASSWORD = 'correct-horse-battery-5'
const COOKIE = '__Host-authgate-session'
const BUNDLE = createRequire(import.meta.url).resolve('@supabase/supabase-js/dist/umd/supabase.js')

/**
 * The page: supabase-js's browser bundle, unchanged, served from authgate's origin, and one
 * `createClient(origin, publishableKey)` with no option at all.
 */
const PAGE = `<!doctype html><title>app</title>
<script src="/supabase.js"></script>
<script>window.sb = supabase.createClient(location.origin, ${JSON.stringify(PUBLISHABLE)})</script>`

/**
 * Issue 38, item 1: supabase-js unchanged in cookie mode, in Chromium, against the real Supabase
 * Auth and the service stand-ins (e2e/support/service-stand-ins.ts), which verify the real tokens.
 * Every call's result and what the page could read is written to the transcript; no real token
 * may ever be among it.
 */
describe(
  'supabase-js unchanged with cookie sessions: stand-ins in the page, real tokens behind',
  { skip: unavailable },
  () => {
    let stack: Stack
    let rest: StandIn
    let storage: StandIn
    let functions: StandIn
    let realtime: RealtimeStandIn
    let project: ProjectKeys | undefined
    let browser: Browser
    let context: BrowserContext
    let page: Page
    let other: Server
    let otherOrigin = ''
    /** Every body and header block the page received, as text. */
    const received: string[] = []
    /** Every real token authgate held for the page's sessions. */
    const real = new Set<string>()
    const transcript: Array<{ call: string; result: unknown }> = []
    const email = `phantom-${Date.now()}@example.com`

    before(async () => {
      const keys = () => project!
      rest = await startPostgrestStandIn(keys)
      storage = await startStorageStandIn(keys)
      functions = await startFunctionsStandIn(keys)
      realtime = await startRealtimeStandIn(keys, 'realtime-dev')
      const bundle = await readFile(BUNDLE)
      stack = await startStack({
        database: 'authgate_e2e_phantom',
        prefix: '/auth/v1',
        extraEnv: { GOTRUE_JWT_DEFAULT_GROUP_NAME: 'authenticated', GOTRUE_LOG_LEVEL: 'info' },
        sessions: { mode: 'on', keys: [{ id: 'k1', key: randomBytes(32) }] },
        services: (backend) => {
          project = { jwtSecret: backend.jwtSecret, signingJwk: backend.signingJwk }
          return {
            urls: { rest: rest.url, storage: storage.url, functions: functions.url, realtime: realtime.url },
            realtimeTenant: 'realtime-dev',
            keys: {
              anon: signApiKey(backend.jwtSecret, 'anon'),
              service: signApiKey(backend.jwtSecret, 'service_role'),
              publishable: [PUBLISHABLE],
              secret: [],
            },
          }
        },
        beforeListen: (app) => {
          app.get('/app', { schema: { hide: true } }, (_request, reply) =>
            reply.type('text/html; charset=utf-8').send(PAGE),
          )
          app.get('/supabase.js', { schema: { hide: true } }, (_request, reply) =>
            reply.type('text/javascript; charset=utf-8').send(bundle),
          )
        },
      })
      // Another site (127.0.0.1 is not localhost's site) that got hold of the page's stand-ins.
      other = createServer((_req, res) =>
        res.writeHead(200, { 'content-type': 'text/html' }).end('<title>other</title>'),
      )
      await new Promise<void>((r) => other.listen(0, '127.0.0.1', r))
      otherOrigin = `http://127.0.0.1:${(other.address() as { port: number }).port}`
      browser = await launchChromium()
      context = await browser.newContext()
      page = await context.newPage()
      page.on('response', async (response) => {
        received.push(JSON.stringify(await response.allHeaders().catch(() => ({}))))
        received.push(await response.text().catch(() => ''))
      })
      page.on('websocket', (socket) => socket.on('framereceived', (frame) => received.push(String(frame.payload))))
      await page.goto(`${stack.publicOrigin}/app`)
    })

    after(async () => {
      for (const line of transcript) console.log(`transcript ${line.call} → ${JSON.stringify(line.result)}`)
      await browser?.close()
      other?.close()
      await stack?.stop()
      await Promise.all([rest?.close(), storage?.close(), functions?.close(), realtime?.close()])
    })

    /** Runs `body` in the page (`sb` is the client) and records its result under `call`. */
    async function run<T>(call: string, body: string, tokens = false): Promise<T> {
      const result = (await page.evaluate(`(async () => { const sb = window.sb; ${body} })()`)) as T
      received.push(JSON.stringify(result))
      const shown = tokens
        ? {
            ...(result as object),
            access: short((result as { access?: string }).access),
            refresh: short((result as { refresh?: string }).refresh),
          }
        : result
      transcript.push({ call, result: shown })
      return result
    }

    const sessionId = async () => (await context.cookies(stack.publicOrigin)).find((c) => c.name === COOKIE)?.value
    const stored = async () => {
      const id = await sessionId()
      const active = id === undefined ? undefined : await stack.app.authgate.sessions!.sessions.load(id)
      if (active !== undefined) real.add(active.session.accessToken).add(active.session.refreshToken)
      return active
    }
    /**
     * A Realtime socket opened by hand (handshake headers of the test's choosing), one `phx_join`
     * with `token`, and the status of Realtime's reply: what a script elsewhere holding the stand-in gets.
     */
    async function joinWith(headers: Record<string, string>, token: string): Promise<string> {
      const socket = connect(stack.port, '127.0.0.1')
      let data = Buffer.alloc(0)
      socket.on('data', (c: Buffer) => (data = Buffer.concat([data, c])))
      const until = async (ready: () => boolean) => {
        const deadline = Date.now() + 10_000
        while (!ready() && Date.now() < deadline && !socket.destroyed) await new Promise((r) => setTimeout(r, 20))
      }
      try {
        const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`)
        socket.write(
          `GET /realtime/v1/websocket?apikey=${PUBLISHABLE}&vsn=2.0.0 HTTP/1.1\r\nHost: localhost:${stack.port}\r\n` +
            `Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n` +
            `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n${extra.join('')}\r\n`,
        )
        await until(() => data.includes('\r\n\r\n'))
        const headEnd = data.indexOf('\r\n\r\n') + 4
        assert.match(data.subarray(0, headEnd).toString(), /^HTTP\/1\.1 101/)
        data = data.subarray(headEnd)
        const join = ['9', '9', 'realtime:probe', 'phx_join', { config: {}, access_token: token }]
        socket.write(maskedTextFrame(JSON.stringify(join)))
        await until(() => data.length >= 2 && data.length >= 2 + (data[1]! & 0x7f))
        const length = data[1]! & 0x7f
        const reply = JSON.parse(data.subarray(2, 2 + length).toString()) as [
          unknown,
          unknown,
          string,
          string,
          { status: string },
        ]
        return `${reply[3]} ${reply[4].status}`
      } finally {
        socket.destroy()
      }
    }
    const short = (token: unknown) => (typeof token === 'string' ? `${token.slice(0, 24)}…(${token.length})` : token)
    /** What page script can read: storage and cookies (all of it checked; the transcript gets the tokens' shape). */
    const readable = async () => {
      const seen = (await page.evaluate(() => ({
        cookie: document.cookie,
        localStorage: Object.fromEntries(Object.entries(localStorage)),
      }))) as { cookie: string; localStorage: Record<string, string> }
      received.push(JSON.stringify(seen))
      const summary: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(seen.localStorage)) {
        const held = JSON.parse(value) as { access_token?: string; refresh_token?: string; user?: { email?: string } }
        summary[key] = held.access_token
          ? { access_token: short(held.access_token), refresh_token: short(held.refresh_token), user: held.user?.email }
          : short(value)
      }
      transcript.push({
        call: 'page reads document.cookie, localStorage',
        result: { cookie: seen.cookie, localStorage: summary },
      })
      return seen
    }

    it('signs up and in: a session of stand-ins, the cookie HttpOnly, the real tokens only in authgate', async () => {
      const up = await run<{ error: unknown; standIn: boolean }>(
        'sb.auth.signUp({ email, password })',
        `const { data, error } = await sb.auth.signUp({ email: ${JSON.stringify(email)}, password: ${JSON.stringify(PASSWORD)} })
       return { error, user: data.user?.email, standIn: data.session?.access_token?.length > 0 }`,
      )
      assert.equal(up.error, null)
      assert.equal(up.standIn, true)
      const signedIn = await run<{ error: unknown; user: string; access: string; refresh: string; expiresAt: number }>(
        'sb.auth.signInWithPassword({ email, password })',
        `const { data, error } = await sb.auth.signInWithPassword({ email: ${JSON.stringify(email)}, password: ${JSON.stringify(PASSWORD)} })
       return { error, user: data.user?.email, access: data.session?.access_token, refresh: data.session?.refresh_token, expiresAt: data.session?.expires_at }`,
        true,
      )
      assert.equal(signedIn.error, null)
      assert.equal(signedIn.user, email)
      const active = await stored()
      assert.ok(active, 'the cookie names a stored session')
      assert.notEqual(signedIn.access, active.session.accessToken)
      assert.notEqual(signedIn.refresh, active.session.refreshToken)
      assert.equal(signedIn.expiresAt, active.session.expiresAt)
      // The stand-in carries the real token's claims, so getClaims() and the MFA helpers read them.
      const claims = decodeJwt(signedIn.access)
      assert.equal(claims.email, email)
      assert.equal(claims.role, 'authenticated')
      const cookie = (await context.cookies(stack.publicOrigin)).find((c) => c.name === COOKIE)!
      assert.equal(cookie.httpOnly, true)
      const page = await readable()
      assert.equal(page.cookie, '')
      transcript.push({ call: "the access stand-in's claims", result: claims })
    })

    it('reads the session and the user; getClaims() checks the stand-in through authgate', async () => {
      const got = await run<{ session: boolean; user: string; claims: string; error: unknown }>(
        'sb.auth.getSession(), sb.auth.getUser(), sb.auth.getClaims()',
        `const s = await sb.auth.getSession()
       const u = await sb.auth.getUser()
       const c = await sb.auth.getClaims()
       return { session: s.data.session !== null, user: u.data.user?.email, claims: c.data?.claims?.email, error: u.error ?? c.error }`,
      )
      assert.deepEqual(got, { session: true, user: email, claims: email, error: null })
    })

    it('from(): PostgREST verifies the real JWT and row-level security sees the user', async () => {
      const rows = await run<{ inserted: unknown; selected: unknown; error: unknown }>(
        "sb.from('todos').insert({ title }).select(); sb.from('todos').select()",
        `const ins = await sb.from('todos').insert({ title: 'from the page' }).select()
       const sel = await sb.from('todos').select('*')
       return { inserted: ins.data, selected: sel.data, error: ins.error ?? sel.error }`,
      )
      assert.equal(rows.error, null)
      const active = await stored()
      const user = decodeJwt(active!.session.accessToken)
      assert.deepEqual(rows.selected, [{ id: 1, title: 'from the page', user_id: user.sub }])
      assert.equal(rest.requests.at(-1)!.headers.authorization, `Bearer ${active!.session.accessToken}`)
      assert.equal(rest.requests.at(-1)!.headers.cookie, undefined)
    })

    it('storage: upload and download as the user', async () => {
      const result = await run<{ up: unknown; down: string; error: unknown }>(
        "sb.storage.from('docs').upload(), .download()",
        `const { data: { user } } = await sb.auth.getUser()
       const path = user.id + '/note.txt'
       const up = await sb.storage.from('docs').upload(path, new TextEncoder().encode('hello from the page'), { contentType: 'text/plain' })
       const down = await sb.storage.from('docs').download(path)
       return { up: up.data?.path, down: down.data ? await down.data.text() : null, error: up.error ?? down.error }`,
      )
      assert.equal(result.error, null)
      assert.equal(result.down, 'hello from the page')
      assert.equal(storage.requests.at(-1)!.headers.authorization, `Bearer ${(await stored())!.session.accessToken}`)
    })

    it('functions.invoke: the function verifies the real JWT', async () => {
      const result = await run<{ data: unknown; error: unknown }>(
        "sb.functions.invoke('hello', { body: { name: 'Ada' } })",
        `const { data, error } = await sb.functions.invoke('hello', { body: { name: 'Ada' } })
       return { data, error: error ? String(error) : null }`,
      )
      assert.deepEqual(result, { data: { message: 'Hello Ada', role: 'authenticated' }, error: null })
      assert.equal(functions.requests.at(-1)!.headers.authorization, `Bearer ${(await stored())!.session.accessToken}`)
    })

    it("realtime: the channel's join carries the real token to Realtime, the stand-in in the page", async () => {
      const result = await run<{ status: string; broadcast: unknown }>(
        "sb.channel('room').on('broadcast', …).subscribe()",
        `const channel = sb.channel('room')
       const broadcast = new Promise((resolve) => channel.on('broadcast', { event: 'hello' }, (m) => resolve(m.payload)))
       const status = await new Promise((resolve) => channel.subscribe((s) => { if (s !== 'CLOSED') resolve(s) }))
       return { status, broadcast: await Promise.race([broadcast, new Promise((r) => setTimeout(() => r('none'), 5000))]) }`,
      )
      assert.deepEqual(result, { status: 'SUBSCRIBED', broadcast: { from: 'realtime' } })
      const join = realtime.messages.find((m) => m[3] === 'phx_join')!
      assert.equal((join[4] as { access_token: string }).access_token, (await stored())!.session.accessToken)
      assert.equal(realtime.handshakes.at(-1)!.headers.cookie, undefined)
      assert.equal(realtime.handshakes.at(-1)!.headers['sec-websocket-extensions'], undefined)
    })

    it('refreshSession(): authgate refreshes at Supabase Auth and answers new stand-ins; realtime gets the new token', async () => {
      const before = await stored()
      const tokens = async () => {
        await afterBackendLogged(
          stack.backend.logs,
          (r) => r.path === '/settings',
          async () => void (await fetch(`${stack.backend.url}/settings`)).body?.cancel(),
        )
        return loggedRequests(stack.backend.logs()).filter((r) => r.path === '/token').length
      }
      const tokensBefore = await tokens()
      // Supabase Auth's tokens carry whole seconds: a refresh within the second of the sign-in would
      // get the same claims, hence the same stand-in, and realtime-js passes a token on only when it
      // changed. So the refresh waits for the next second.
      const { iat } = decodeJwt(before!.session.accessToken)
      const wait = (iat! + 1) * 1000 - Date.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait + 50))
      const refreshed = await run<{ error: unknown; changed: boolean; later: boolean; access: string }>(
        'sb.auth.refreshSession()',
        `const old = (await sb.auth.getSession()).data.session
       const { data, error } = await sb.auth.refreshSession()
       return { error, changed: data.session?.access_token !== old.access_token, later: data.session?.expires_at > old.expires_at, access: data.session?.access_token }`,
        true,
      )
      assert.deepEqual(
        { ...refreshed, access: undefined },
        { error: null, changed: true, later: true, access: undefined },
      )
      const afterRefresh = await stored()
      assert.notEqual(afterRefresh!.session.refreshToken, before!.session.refreshToken)
      // The page's new stand-in carries the new real token's claims.
      const { asb, ...carried } = decodeJwt(refreshed.access)
      assert.ok(asb)
      assert.deepEqual(carried, decodeJwt(afterRefresh!.session.accessToken))
      assert.equal((await tokens()) - tokensBefore, 1, "Supabase Auth's log: one /token request")
      // supabase-js passes the new token to Realtime (`access_token` message): swapped too.
      const deadline = Date.now() + 10_000
      while (!realtime.messages.some((m) => m[3] === 'access_token') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100))
      const pushed = realtime.messages.filter((m) => m[3] === 'access_token').at(-1)
      assert.ok(pushed, 'realtime-js sent the refreshed token')
      assert.equal((pushed[4] as { access_token: string }).access_token, afterRefresh!.session.accessToken)
      const again = await run<{ rows: number; error: unknown }>(
        "sb.from('todos').select() after the refresh",
        "const { data, error } = await sb.from('todos').select(); return { rows: data?.length, error }",
      )
      assert.deepEqual(again, { rows: 1, error: null })
      assert.equal(rest.requests.at(-1)!.headers.authorization, `Bearer ${afterRefresh!.session.accessToken}`)
    })

    it('a stand-in is worthless without its cookie, from another origin, or at the services themselves', async () => {
      const { localStorage: saved } = await readable()
      const session = JSON.parse(Object.values(saved).find((v) => v.includes('access_token'))!) as {
        access_token: string
        refresh_token: string
      }
      const bearer = { authorization: `Bearer ${session.access_token}`, apikey: PUBLISHABLE }
      const cookie = `${COOKIE}=${(await sessionId())!}`
      const outcomes: Record<string, unknown> = {}
      // Without the cookie (another machine that read the page's storage).
      const user = await fetch(`${stack.url}/auth/v1/user`, { headers: bearer })
      outcomes['GET /auth/v1/user, stand-in, no cookie'] = [
        user.status,
        ((await user.json()) as { error_code: string }).error_code,
      ]
      const rows = await fetch(`${stack.url}/rest/v1/todos`, { headers: bearer })
      outcomes['GET /rest/v1/todos, stand-in, no cookie'] = [
        rows.status,
        ((await rows.json()) as { code: string }).code,
      ]
      const refresh = await fetch(`${stack.url}/auth/v1/token?grant_type=refresh_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', apikey: PUBLISHABLE },
        body: JSON.stringify({ refresh_token: session.refresh_token }),
      })
      outcomes['POST /auth/v1/token refresh stand-in, no cookie'] = [
        refresh.status,
        ((await refresh.json()) as { error_code: string }).error_code,
      ]
      // Straight at the services and Supabase Auth: not signed by any key of theirs.
      const direct = await fetch(`${rest.url}/todos`, { headers: { authorization: bearer.authorization } })
      outcomes['PostgREST itself'] = [direct.status, ((await direct.json()) as { code: string }).code]
      const auth = await fetch(`${stack.backend.url}/user`, { headers: { authorization: bearer.authorization } })
      outcomes['Supabase Auth itself'] = [auth.status]
      await auth.body?.cancel()
      // With the cookie, but from an origin that is not allowed (a sibling that shares the cookie).
      const foreign = await fetch(`${stack.url}/rest/v1/todos`, {
        headers: { ...bearer, cookie, origin: 'http://evil.localhost:1', host: `localhost:${stack.port}` },
      })
      outcomes['GET /rest/v1/todos, stand-in and cookie, foreign Origin'] = [
        foreign.status,
        ((await foreign.json()) as { code: string }).code,
      ]
      // A page of another site in the same browser: the browser does not send the cookie there.
      const site = await context.newPage()
      try {
        await site.goto(`${otherOrigin}/`)
        outcomes['another site in the browser: fetch with the stand-in'] = await site.evaluate(
          async ([url, headers]) => {
            const res = await fetch(url, { headers, credentials: 'include' }).catch((e: Error) => e.message)
            return typeof res === 'string' ? res : res.status
          },
          [`${stack.publicOrigin}/rest/v1/todos`, bearer] as const,
        )
      } finally {
        await site.close()
      }
      // Realtime's socket: the stand-in in a join is swapped only with the cookie from the own origin.
      const own = { origin: stack.publicOrigin }
      outcomes['Realtime join, stand-in, cookie, own Origin'] = await joinWith({ ...own, cookie }, session.access_token)
      outcomes['Realtime join, stand-in, no cookie'] = await joinWith(own, session.access_token)
      outcomes['Realtime join, stand-in and cookie, foreign Origin'] = await joinWith(
        { origin: 'http://evil.localhost:1', cookie },
        session.access_token,
      )
      transcript.push({ call: 'the stand-in elsewhere', result: outcomes })
      assert.deepEqual(outcomes['GET /auth/v1/user, stand-in, no cookie'], [401, 'session_not_found'])
      assert.deepEqual(outcomes['GET /rest/v1/todos, stand-in, no cookie'], [401, 'session_not_found'])
      assert.deepEqual(outcomes['POST /auth/v1/token refresh stand-in, no cookie'], [400, 'refresh_token_not_found'])
      assert.deepEqual(outcomes['PostgREST itself'], [401, 'PGRST301'])
      assert.ok((outcomes['Supabase Auth itself'] as number[])[0]! >= 400)
      assert.deepEqual(outcomes['GET /rest/v1/todos, stand-in and cookie, foreign Origin'], [403, 'cross_site_request'])
      assert.equal(outcomes['Realtime join, stand-in, cookie, own Origin'], 'phx_reply ok')
      assert.equal(outcomes['Realtime join, stand-in, no cookie'], 'phx_reply error')
      assert.equal(outcomes['Realtime join, stand-in and cookie, foreign Origin'], 'phx_reply error')
      // No CORS for that site: the browser does not even let it read an answer.
      assert.equal(typeof outcomes['another site in the browser: fetch with the stand-in'], 'string')
    })

    it('signOut(): Supabase Auth revokes the session, the cookie goes, the stand-ins stop working', async () => {
      const before = await stored()
      const { localStorage: saved } = await readable()
      const session = JSON.parse(Object.values(saved).find((v) => v.includes('access_token'))!) as {
        access_token: string
      }
      const out = await run<{ error: unknown; session: unknown }>(
        'sb.auth.signOut()',
        'const { error } = await sb.auth.signOut(); return { error, session: (await sb.auth.getSession()).data.session }',
      )
      assert.deepEqual(out, { error: null, session: null })
      assert.equal(await sessionId(), undefined)
      assert.equal(await stack.app.authgate.sessions!.sessions.load(before!.id), undefined)
      const refresh = await fetch(`${stack.backend.url}/token?grant_type=refresh_token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refresh_token: before!.session.refreshToken }),
      })
      assert.equal(refresh.status, 400, 'the real refresh token is revoked at Supabase Auth')
      await refresh.body?.cancel()
      const replay = await fetch(`${stack.url}/rest/v1/todos`, {
        headers: {
          authorization: `Bearer ${session.access_token}`,
          apikey: PUBLISHABLE,
          cookie: `${COOKIE}=${before!.id}`,
        },
      })
      assert.equal(replay.status, 401)
      await replay.body?.cancel()
      const anon = await run<{ rows: number; error: unknown }>(
        "sb.from('todos').select() signed out",
        "const { data, error } = await sb.from('todos').select(); return { rows: data?.length, error }",
      )
      assert.deepEqual(anon, { rows: 0, error: null })
      await readable()
    })

    it('no real token ever reached the page: answers, headers, socket frames, storage', () => {
      assert.ok(real.size >= 4, `${real.size} real tokens held`)
      assert.ok(received.length > 20)
      for (const token of real)
        for (const text of received) assert.ok(!text.includes(token), `a real token reached the page: ${short(token)}`)
      transcript.push({
        call: 'what the page received',
        result: `${received.length} answers, header blocks and socket frames; none holds any of the ${real.size} real tokens`,
      })
    })
  },
)
