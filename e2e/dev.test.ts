import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { GoTrueClient } from '@supabase/auth-js'
import { createClient } from '@supabase/supabase-js'
import type { Page } from 'playwright-core'
import { embeddedPostgresBinaries } from '../scripts/dev/embedded-postgres.ts'
import { chromiumUnavailableReason, launchChromium } from './support/chromium.ts'
import { dropDatabase, postgresUnavailableReason } from '../scripts/supabase-auth/postgres.ts'
import { reservePort } from '../scripts/supabase-auth/port.ts'
import { findSupabaseAuthBinary } from '../scripts/supabase-auth/binary.ts'
import { plainEnvironment } from '../test/support/plain-environment.ts'

/**
 * `npm run dev` as a person runs it: started in a process group of its own (a terminal's), used
 * through the URLs and credentials it prints, stopped with SIGINT to the whole group (Ctrl-C).
 * Afterwards no process it started may be alive and none of its ports open.
 */
const repoRoot = fileURLToPath(new URL('..', import.meta.url))

const binary = await findSupabaseAuthBinary()
const noBinary = 'reason' in binary ? binary.reason : undefined
const noPostgres = await postgresUnavailableReason()
const embedded = await embeddedPostgresBinaries()
const noEmbedded = 'reason' in embedded ? embedded.reason : undefined
const noChromium = await chromiumUnavailableReason()

interface Ready {
  api: string
  docs: string
  metrics: string
  email: string
  password: string
  /** authgate, Supabase Auth and (embedded) PostgreSQL ports. */
  ports: number[]
}

interface DevRun {
  child: ChildProcess
  ready: Ready
  output(): string
}

/**
 * A terminal's environment: nothing of the test runner's. The coverage the stack's Node.js processes
 * (npm, the dev script, authgate) would record counts for nothing where authgate runs from dist/, as
 * in CI.
 */
const terminal = plainEnvironment()

const READY = /authgate dev: ready — API (\S+) · docs (\S+) · metrics (\S+) · test user (\S+) \/ (\S+)\n/
const SUPABASE_JS = /export SUPABASE_URL=(\S+) SUPABASE_KEY=(\S+)\n/
const BACKEND = /Supabase Auth {2}http:\/\/127\.0\.0\.1:(\d+) \(.*? at 127\.0\.0\.1:(\d+)\)/

async function startDev(args: string[], env: Record<string, string> = {}): Promise<DevRun> {
  // Supabase Auth's fixed port (9999) may be another engineer's or test's on a shared machine.
  const authPort = ['--auth-port', String(await freePort())]
  const child = spawn('npm', ['run', 'dev', '--', ...authPort, ...args], {
    cwd: repoRoot,
    env: { ...terminal, AUTHGATE_LOG_LEVEL: 'warn', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  // The first start may create a cluster and run every migration: minutes on a loaded machine.
  const deadline = Date.now() + 240_000
  while (Date.now() < deadline) {
    const ready = READY.exec(output)
    const backend = BACKEND.exec(output)
    if (ready !== null && backend !== null) {
      const [, api, docs, metrics, email, password] = ready as unknown as string[]
      const authgatePort = Number(new URL(api!).port)
      const ports = [authgatePort, Number(backend[1])]
      assert.equal(backend[1], authPort[1], 'Supabase Auth listens on the port given')
      if (output.includes('embedded PostgreSQL')) ports.push(Number(backend[2]))
      return {
        child,
        ready: { api: api!, docs: docs!, metrics: metrics!, email: email!, password: password!, ports },
        output: () => output,
      }
    }
    if (child.exitCode !== null) throw new Error(`npm run dev exited (${child.exitCode}):\n${output}`)
    await sleep(250)
  }
  process.kill(-child.pid!, 'SIGKILL')
  throw new Error(`npm run dev printed no ready line within 240 s:\n${output}`)
}

/** The README's supabase-js program, exactly as written between its markers. */
async function readmeExample(): Promise<string> {
  const readme = await readFile(join(repoRoot, 'README.md'), 'utf8')
  const block = /<!-- dev-example:start[^>]*-->\s*```js\n([\s\S]*?)```\s*<!-- dev-example:end -->/.exec(readme)
  if (!block) throw new Error('README.md: the dev example markers are missing')
  return block[1]!
}

/** Runs the README's program as its reader does: `node try.mjs` in the clone, with the printed variables. */
async function runReadmeExample(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  // Inside the repository, so that '@supabase/supabase-js' resolves as it does in the clone.
  const dir = await mkdtemp(join(repoRoot, '.dev-example-'))
  try {
    await writeFile(join(dir, 'try.mjs'), await readmeExample())
    const child = spawn(process.execPath, ['try.mjs'], { cwd: dir, env: { ...terminal, ...env } })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    return { code, output }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Every process below `root`, from /proc. */
async function descendants(root: number): Promise<number[]> {
  const parents = new Map<number, number>()
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '')
    // pid (comm) state ppid ...; comm may hold spaces and parentheses, so it is read from the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    if (Number.isInteger(ppid)) parents.set(Number(entry), ppid)
  }
  const found: number[] = []
  const queue = [root]
  while (queue.length > 0) {
    const parent = queue.shift()!
    for (const [pid, ppid] of parents) {
      if (ppid === parent) {
        found.push(pid)
        queue.push(pid)
      }
    }
  }
  return found
}

async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined)
  // A zombie has ended; only its parent's wait is pending.
  return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/** Ctrl-C as a terminal sends it: SIGINT to every process of the group. */
async function interrupt(run: DevRun): Promise<void> {
  const pid = run.child.pid!
  const tree = await descendants(pid)
  assert.ok(tree.length >= 3, `npm, authgate dev and its services run: ${tree.join(' ')}`)
  const exited = new Promise<number | null>((resolve) => run.child.once('exit', (code) => resolve(code)))
  process.kill(-pid, 'SIGINT')
  const code = await Promise.race([exited, sleep(120_000, 'timeout' as const, { ref: false })])
  assert.notEqual(code, 'timeout', `npm run dev did not stop within 120 s:\n${run.output()}`)
  assert.equal(code, 0, run.output())
  // Orphans would be adopted by init at once; a moment is allowed for their exit to be reaped.
  let left: number[] = []
  for (let i = 0; i < 50; i++) {
    left = []
    for (const p of [pid, ...tree]) if (await alive(p)) left.push(p)
    if (left.length === 0) break
    await sleep(100)
  }
  assert.deepEqual(left, [], 'processes left running')
  for (const port of run.ready.ports) assert.equal(await portOpen(port), false, `port ${port} is still open`)
}

function client(api: string): GoTrueClient {
  return new GoTrueClient({ url: api, persistSession: false, autoRefreshToken: false, detectSessionInUrl: false })
}

/** Signs a new user up, then in, then reads it back with the token: the "try it" sequence. */
async function signUpAndIn(api: string, email: string, password: string): Promise<void> {
  const auth = client(api)
  const signUp = await auth.signUp({ email, password })
  assert.equal(signUp.error, null)
  // E-mail auto-confirmation is on: the sign-up itself opens a session.
  assert.ok(signUp.data.session?.access_token)
  await signIn(api, email, password)
}

async function signIn(api: string, email: string, password: string): Promise<void> {
  const auth = client(api)
  const { data, error } = await auth.signInWithPassword({ email, password })
  assert.equal(error, null)
  const user = await auth.getUser(data.session!.access_token)
  assert.equal(user.error, null)
  assert.equal(user.data.user?.email, email)
}

async function freePort(): Promise<number> {
  const reservation = await reservePort()
  await reservation.release()
  return reservation.port
}

/** The reference page's "try it": opens an operation's request client, sets a JSON body, sends it. */
async function tryIt(
  page: Page,
  summary: string,
  request: string,
  body?: unknown,
): Promise<{ status: number; text: string; url: string }> {
  const client = page.getByRole('button', { name: 'Close Client' })
  if (await client.count()) await client.click()
  await page.getByText(summary, { exact: true }).first().click()
  const [method, path] = request.split(' ') as [string, string]
  await page.getByRole('button', { name: `Test Request (${method.toLowerCase()} ${path})` }).click()
  if (body !== undefined) {
    // The body editor (CodeMirror) holds the document's example until replaced; an answer shown
    // earlier is a read-only one.
    const editor = page.locator('.cm-content[contenteditable="true"]').last()
    await editor.click()
    await page.keyboard.press('Control+A')
    await page.keyboard.press('Delete')
    await editor.fill(JSON.stringify(body))
  }
  const answer = page.waitForResponse((r) => new URL(r.url()).pathname === path && r.request().method() === method)
  await page.keyboard.press('Control+Enter')
  const response = await answer
  return { status: response.status(), text: await response.text(), url: response.url() }
}

describe('npm run dev', { timeout: 900_000 }, () => {
  const database = `authgate_devtest_${process.pid}`
  after(async () => {
    if (noBinary === undefined && noPostgres === undefined) await dropDatabase(database).catch(() => undefined)
  })

  it(
    'with the PostgreSQL at PGHOST: ready line, sign-up and sign-in through it, Ctrl-C leaves nothing',
    { skip: noBinary ?? noPostgres ?? false, timeout: 400_000 },
    async () => {
      const run = await startDev(['--port', String(await freePort()), '--database', database, '--fresh'])
      try {
        const { api, docs, metrics, email, password } = run.ready
        assert.match(api, /^http:\/\/localhost:\d+\/auth\/v1$/)
        assert.match(run.output(), /PostgreSQL at /)
        await signIn(api, email, password)
        await signUpAndIn(api, `dev-test-${Date.now()}@example.com`, 'dev-test-password-1')
        // The JWT issuer is the public URL: what a client verifying tokens expects.
        const session = await client(api).signInWithPassword({ email, password })
        const claims = JSON.parse(
          Buffer.from(session.data.session!.access_token.split('.')[1]!, 'base64url').toString(),
        )
        assert.equal(claims.iss, api)
        // As on Supabase's platform: users' tokens carry the role `authenticated`, not an empty one.
        assert.equal(claims.role, 'authenticated')
        assert.equal(claims.aud, 'authenticated')
        // A start-up log without noise: no deprecation notice for the settings it makes on purpose,
        // no refused sign-in from its own check of the test user, nothing from authgate's start-up
        // checks (at warn, the level the test runs it at).
        const log = run.output()
        assert.doesNotMatch(log, /DEPRECATION NOTICE/)
        assert.doesNotMatch(log, /Invalid login credentials/)
        assert.doesNotMatch(log, /"msg":"doctor:/)
        for (const url of [docs, metrics]) {
          const response = await fetch(url)
          await response.body?.cancel()
          assert.equal(response.status, 200, url)
        }

        // The README's supabase-js program, with the URL and key of the ready line.
        const printed = SUPABASE_JS.exec(log)
        assert.ok(printed, log)
        const [, url, key] = printed as unknown as [string, string, string]
        assert.equal(url, new URL(api).origin)
        assert.match(log, new RegExp(`supabase-js {4}createClient\\('${url}', '${key}'\\)`))
        // The anon key: a JWT with the role anon, signed by the stack's Supabase Auth.
        const anon = JSON.parse(Buffer.from(key.split('.')[1]!, 'base64url').toString()) as { role: string }
        assert.equal(anon.role, 'anon')
        const example = await runReadmeExample({ SUPABASE_URL: url, SUPABASE_KEY: key })
        assert.equal(example.code, 0, example.output)
        assert.match(example.output, /^signed up: newcomer-\d+@example\.com$/m)
        assert.match(example.output, /^signed in, token expires in \d+ s$/m)
        assert.match(example.output, /^getUser: [0-9a-f-]{36} newcomer-\d+@example\.com$/m)
        assert.match(example.output, /^signed out: true$/m)
        // A service the stack does not run says so, in authgate's shape, through supabase-js.
        const supabase = createClient(url, key, { auth: { persistSession: false, autoRefreshToken: false } })
        const todos = await supabase.from('todos').select()
        assert.equal(todos.status, 404)
        assert.match(todos.error?.message ?? '', /PostgREST is not configured: .*AUTHGATE_REST_URL/)
      } finally {
        await interrupt(run)
      }
    },
  )

  it(
    'with no PostgreSQL reachable: an embedded one, whose data the second start reuses',
    { skip: noBinary ?? noEmbedded ?? false, timeout: 600_000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'authgate-dev-postgres-'))
      // As root, PostgreSQL runs as another account, which must reach the directory.
      await chmod(dir, 0o755)
      const nothing = await freePort()
      const env = { PGHOST: '127.0.0.1', PGPORT: String(nothing) }
      const args = ['--postgres-dir', dir, '--database', 'authgate_dev']
      const email = `dev-embedded-${Date.now()}@example.com`
      try {
        const first = await startDev(['--port', String(await freePort()), ...args], env)
        try {
          assert.match(first.output(), /using an embedded PostgreSQL/)
          assert.equal(first.ready.ports.length, 3)
          await signIn(first.ready.api, first.ready.email, first.ready.password)
          await signUpAndIn(first.ready.api, email, 'dev-test-password-1')
        } finally {
          await interrupt(first)
        }
        const second = await startDev(['--port', String(await freePort()), ...args], env)
        try {
          assert.doesNotMatch(second.output(), /creating its cluster/)
          // The test user is found, not tried: no refused sign-in in Supabase Auth's log.
          assert.doesNotMatch(second.output(), /Invalid login credentials/)
          await signIn(second.ready.api, email, 'dev-test-password-1')
        } finally {
          await interrupt(second)
        }
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    },
  )

  it(
    'the reference page\'s "try it" signs up, signs in and reads the user in Chromium',
    { skip: noBinary ?? noPostgres ?? noChromium ?? false, timeout: 400_000 },
    async () => {
      const run = await startDev(['--port', String(await freePort()), '--database', database])
      const browser = await launchChromium()
      try {
        const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
        page.setDefaultTimeout(60_000)
        const violations: string[] = []
        await page.exposeFunction('reportViolation', (v: string) => violations.push(v))
        await page.addInitScript(() => {
          document.addEventListener('securitypolicyviolation', (e) => {
            void (window as unknown as { reportViolation: (v: string) => void }).reportViolation(
              `${e.violatedDirective} ${e.blockedURI}`,
            )
          })
        })
        await page.goto(run.ready.docs, { timeout: 120_000 })
        // The introduction says how to get a token and why untagged routes show a 401.
        await page.getByText('Introduction', { exact: true }).first().waitFor()
        await page.getByText('Copy access_token from the answer.', { exact: false }).first().waitFor()
        // Signing in as sent, with the examples as the page fills them: the test user's, and no
        // optional redirect_to ticked (a redirect the allow list does not hold). First, while no body
        // has been edited: the client keeps an edited body for as long as the page is open.
        const asFilled = await tryIt(page, 'Sign in or refresh a session', 'POST /auth/v1/token')
        assert.equal(asFilled.status, 200, asFilled.text)
        assert.equal((JSON.parse(asFilled.text) as { user: { email: string } }).user.email, run.ready.email)
        assert.equal(new URL(asFilled.url).searchParams.get('redirect_to'), null, asFilled.url)
        if (process.env.SCREENSHOT_DIR)
          await page.screenshot({ path: join(process.env.SCREENSHOT_DIR, 'try-it-sign-in.png') })
        const email = `dev-try-it-${Date.now()}@example.com`
        const password = 'correct-horse-battery-7'
        const signUp = await tryIt(page, 'Sign up with e-mail or phone and password', 'POST /auth/v1/signup', {
          email,
          password,
        })
        assert.equal(signUp.status, 200, signUp.text)
        const signIn = await tryIt(page, 'Sign in or refresh a session', 'POST /auth/v1/token', { email, password })
        assert.equal(signIn.status, 200, signIn.text)
        const token = (JSON.parse(signIn.text) as { access_token: string }).access_token
        // GET /user requires the bearer token: the client's Authentication section takes it.
        await page.getByRole('button', { name: 'Close Client' }).click()
        await page.getByText('Get the signed-in user', { exact: true }).first().click()
        await page.getByRole('button', { name: 'Test Request (get /auth/v1/user)' }).click()
        await page.getByText('Authentication', { exact: true }).last().click()
        await page.locator('[placeholder="Token"], [data-placeholder="Token"]').first().fill(token)
        const answer = page.waitForResponse((r) => new URL(r.url()).pathname === '/auth/v1/user')
        await page.keyboard.press('Control+Enter')
        const user = await answer
        assert.equal(user.status(), 200)
        assert.equal(((await user.json()) as { email: string }).email, email)
        // zod's probe for `Function('')` is refused by design; nothing else may be.
        assert.deepEqual(
          violations.filter((v) => v !== 'script-src eval'),
          [],
        )
      } finally {
        await browser.close()
        await interrupt(run)
      }
    },
  )
})
