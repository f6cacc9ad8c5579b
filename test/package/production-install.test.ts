import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { reservePort } from '../../scripts/supabase-auth/port.ts'
import { plainEnvironment } from '../support/plain-environment.ts'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/**
 * SLOW (about 30 to 60 s: a clone and an install). A production install from a clone, as a server
 * is set up without the package registry's copy: `git clone`, `npm ci --omit=dev`, `npm start`. npm
 * runs `prepare` on `npm ci`, and the compiler it would use is a development dependency: it must
 * say so and let the install finish, and the service must then run from its sources. The install
 * is offline, from npm's cache (which the repository's own `npm ci` filled), so the test needs no
 * network. The clone is of the committed tree (HEAD), as a user's would be.
 */
test(
  'SLOW: `npm ci --omit=dev` in a fresh clone installs a service that `npm start` runs (no compiler needed)',
  { timeout: 300_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'authgate-production-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const clone = join(dir, 'authgate')
    await run('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone])
    // npm and the service run as on a server: the runner's coverage and options are none of theirs.
    const env = plainEnvironment({
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    })
    const installed = await run('npm', ['ci', '--omit=dev', '--offline'], { cwd: clone, env, maxBuffer: 1 << 24 })
    assert.match(
      installed.stderr,
      /authgate: typescript \(a development dependency\) is not installed, so dist\/ is not built: npm start runs the TypeScript sources/,
    )
    assert.equal(existsSync(join(clone, 'node_modules', 'typescript')), false, 'no development dependency installed')
    assert.equal(existsSync(join(clone, 'dist')), false)

    const reservation = await reservePort()
    await reservation.release()
    const origin = `http://127.0.0.1:${reservation.port}`
    const service = spawn('npm', ['start'], {
      cwd: clone,
      // Nothing at the backend URL: the service starts, serves its docs and answers 502 on Auth.
      env: { ...env, PORT: String(reservation.port), HOST: '127.0.0.1', AUTHGATE_BACKEND_URL: 'http://127.0.0.1:1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    service.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    service.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    const exited = new Promise<number | null>((resolve) => service.once('exit', (code) => resolve(code)))
    t.after(() => {
      if (service.exitCode === null) service.kill('SIGKILL')
    })
    const deadline = Date.now() + 120_000
    let live: Response | undefined
    while (Date.now() < deadline && service.exitCode === null) {
      live = await fetch(`${origin}/livez`).catch(() => undefined)
      if (live?.status === 200) break
      await sleep(250)
    }
    assert.equal(live?.status, 200, `npm start did not answer on /livez:\n${output}`)
    const docs = await fetch(`${origin}/docs`)
    assert.equal(docs.status, 200)
    assert.match(await docs.text(), /<html/i)
    const settings = await fetch(`${origin}/auth/settings`)
    assert.equal(settings.status, 502)
    assert.equal(((await settings.json()) as { error_code: string }).error_code, 'backend_unreachable')
    // `npm start` execs the service: the signal reaches it, and it stops cleanly.
    service.kill('SIGTERM')
    assert.equal(await exited, 0, output)
  },
)
