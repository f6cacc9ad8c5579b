import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { AuthgateConfigError, loadCoreConfig } from '../../src/config.ts'
import { AuthgateConfigErrors, readSettings } from '../../src/config/collect.ts'
import { SETTINGS, TOOL_VARIABLES, unknownVariables } from '../../src/config/schema.ts'
import { loadRateLimitSettings } from '../../src/settings.ts'

const ROOT = new URL('../../', import.meta.url)

/** Starts the service with exactly this environment; it must exit on its own (a timeout fails). */
function start(env: Record<string, string>) {
  return spawnSync(process.execPath, ['bin/authgate.js'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 60_000,
  })
}

const rejects = (env: Record<string, string>, variable: string, message: RegExp) =>
  assert.throws(
    () => loadCoreConfig(env),
    (err: unknown) => err instanceof AuthgateConfigError && err.option === variable && message.test(err.message),
    JSON.stringify(env),
  )

test('HOST must be an address or a host name: a clear message, no stack trace', () => {
  rejects({ HOST: 'not..a..host' }, 'HOST', /^HOST: not an IP address or host name: "not\.\.a\.\.host"/)
  rejects({ HOST: 'http://0.0.0.0' }, 'HOST', /not an IP address or host name/)
  rejects({ HOST: '-lead' }, 'HOST', /not an IP address or host name/)
  for (const host of ['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost', 'api.internal', 'gw-1.example.com'])
    assert.equal(loadCoreConfig({ HOST: host }).host, host)
  const out = start({ HOST: 'not..a..host' })
  assert.equal(out.status, 2)
  assert.equal(
    out.stderr,
    `authgate: invalid configuration: HOST: not an IP address or host name: "not..a..host" (e.g. 0.0.0.0 for every IPv4 interface, :: for every interface, 127.0.0.1, localhost)\n`,
  )
})

test('a host name that does not resolve, or a port in use: one line, no stack trace', async () => {
  const unresolvable = start({ HOST: 'no-such-host.invalid', PORT: '0', AUTHGATE_LOG_LEVEL: 'silent' })
  assert.equal(unresolvable.status, 1)
  assert.match(unresolvable.stderr, /^authgate: cannot listen on no-such-host\.invalid:0 \(HOST, PORT\): .*ENOTFOUND/)
  assert.doesNotMatch(unresolvable.stderr, /\n\s+at /)

  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  const { port } = taken.address() as { port: number }
  try {
    const out = start({ HOST: '127.0.0.1', PORT: String(port), AUTHGATE_LOG_LEVEL: 'silent' })
    assert.equal(out.status, 1)
    assert.match(
      out.stderr,
      new RegExp(`^authgate: cannot listen on 127\\.0\\.0\\.1:${port} \\(HOST, PORT\\): .*EADDRINUSE`),
    )
    assert.doesNotMatch(out.stderr, /\n\s+at /)
  } finally {
    await new Promise((resolve) => taken.close(resolve))
  }
})

test('integers out of range name the range', () => {
  rejects({ PORT: '-1' }, 'PORT', /^PORT: must be between 0 and 65535, got -1$/)
  rejects({ PORT: '70000' }, 'PORT', /^PORT: must be between 0 and 65535, got 70000$/)
  rejects({ PORT: 'http' }, 'PORT', /^PORT: expected an integer between 0 and 65535, got "http"$/)
  assert.throws(
    () => loadRateLimitSettings({ AUTHGATE_RATE_LIMIT_IPV6_PREFIX: '129' }),
    /AUTHGATE_RATE_LIMIT_IPV6_PREFIX: must be between 1 and 128, got 129/,
  )
})

test('a clash of the served paths names both settings and blames the one that was set', () => {
  rejects(
    { AUTHGATE_METRICS_PATH: '/livez' },
    'AUTHGATE_METRICS_PATH',
    /^AUTHGATE_METRICS_PATH: "\/livez" is also AUTHGATE_LIVENESS_PATH's path; the two must differ$/,
  )
  rejects(
    { AUTHGATE_READINESS_PATH: '/livez' },
    'AUTHGATE_READINESS_PATH',
    /"\/livez" is also AUTHGATE_LIVENESS_PATH's path/,
  )
  rejects(
    { AUTHGATE_LIVENESS_PATH: '/metrics' },
    'AUTHGATE_LIVENESS_PATH',
    /"\/metrics" is also AUTHGATE_METRICS_PATH's path/,
  )
  rejects(
    { AUTHGATE_LIVENESS_PATH: '/health', AUTHGATE_READINESS_PATH: '/health' },
    'AUTHGATE_READINESS_PATH',
    /"\/health" is also AUTHGATE_LIVENESS_PATH's path/,
  )
  // Metrics on their own port share no path with the main listener.
  assert.equal(
    loadCoreConfig({ AUTHGATE_METRICS_PATH: '/livez', AUTHGATE_METRICS_PORT: '9100', AUTHGATE_LIVENESS_PATH: '/livez' })
      .metricsPath,
    '/livez',
  )
})

test('every mistake of one start is reported together, unknown variables among them', () => {
  const env = {
    PORT: '-1',
    HOST: 'not..a..host',
    AUTHGATE_BACKEND_ULR: 'http://x',
    AUTHGATE_RATE_LIMIT: 'lots',
    AUTHGATE_METRICS_PATH: '/livez',
  }
  const read = (e: Record<string, string | undefined>) => ({ core: loadCoreConfig(e), rl: loadRateLimitSettings(e) })
  assert.throws(
    () => readSettings(env, read),
    (err: unknown) => {
      assert.ok(err instanceof AuthgateConfigErrors)
      assert.deepEqual(err.problems.map((p) => p.option).sort(), [
        'AUTHGATE_BACKEND_ULR',
        'AUTHGATE_METRICS_PATH',
        'AUTHGATE_RATE_LIMIT',
        'HOST',
        'PORT',
      ])
      return true
    },
  )
  // One mistake keeps the single-line message; none returns the settings.
  assert.throws(
    () => readSettings({ PORT: '-1' }, read),
    (err: unknown) => err instanceof AuthgateConfigError && !(err instanceof AuthgateConfigErrors),
  )
  assert.equal(readSettings({ PORT: '81' }, read).core.port, 81)

  const out = start(env)
  assert.equal(out.status, 2)
  const lines = out.stderr.trimEnd().split('\n')
  assert.equal(lines[0], 'authgate: invalid configuration: 5 problems:')
  for (const start of [
    'AUTHGATE_BACKEND_ULR: unknown variable; did you mean AUTHGATE_BACKEND_URL?',
    'PORT: must be between 0 and 65535',
    'HOST: not an IP address',
    'AUTHGATE_RATE_LIMIT: expected a rate',
    'AUTHGATE_METRICS_PATH: "/livez" is also',
  ])
    assert.ok(
      lines.some((l) => l.startsWith(`  ${start}`)),
      `${start} in\n${out.stderr}`,
    )
  assert.doesNotMatch(out.stderr, /\n\s+at /)
})

/** Files of this repository's tools and docs (not node_modules, not the tests' own made-up names). */
function files(dir: URL): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir)) {
    const path = join(dir.pathname, name)
    if (statSync(path).isDirectory()) out.push(...files(new URL(`${name}/`, dir)))
    else out.push(path)
  }
  return out
}

test('the variables the scripts, suites and docs tell a developer to set are not refused by npm start', () => {
  const sources = [
    ...['scripts/', 'e2e/', 'bench/', 'test/e2e-support/', 'docs/', '.ci/'].flatMap((d) => files(new URL(d, ROOT))),
    join(ROOT.pathname, 'README.md'),
    join(ROOT.pathname, 'Dockerfile'),
  ]
  const named = new Set<string>()
  for (const file of sources)
    for (const m of readFileSync(file, 'utf8').matchAll(/AUTHGATE_[A-Z0-9_]*[A-Z0-9]/g)) named.add(m[0])
  const settings = new Set(SETTINGS.map((s) => s.name))
  for (const name of named)
    assert.ok(settings.has(name) || TOOL_VARIABLES.includes(name), `${name} is neither a setting nor a tool variable`)
  for (const tool of ['AUTHGATE_SUPABASE_AUTH_SRC', 'AUTHGATE_SUPABASE_AUTH_BIN', 'AUTHGATE_CHROMIUM'])
    assert.deepEqual(unknownVariables({ [tool]: '/x' }), [], tool)

  // And the service itself starts with them set (a listen on port 0, then SIGTERM).
  const out = spawnSync(
    process.execPath,
    [
      '-e',
      `
      const { spawn } = require('node:child_process')
      const child = spawn(process.execPath, ['bin/authgate.js'], { stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.on('data', (d) => { out += d; if (out.includes('authgate ready')) child.kill('SIGTERM') })
      child.stderr.on('data', (d) => process.stderr.write(d))
      child.on('exit', (code) => { process.stdout.write(out.includes('authgate ready') ? 'ready' : 'not ready'); process.exit(0) })
    `,
    ],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: '0',
        AUTHGATE_BACKEND_URL: 'http://127.0.0.1:9',
        AUTHGATE_SUPABASE_AUTH_SRC: '/tmp/supabase-auth.tar.gz',
        AUTHGATE_SUPABASE_AUTH_BIN: '/tmp/supabase-auth',
        AUTHGATE_CHROMIUM: '/usr/bin/chromium',
      },
    },
  )
  assert.equal(out.stdout, 'ready', out.stderr)
})
