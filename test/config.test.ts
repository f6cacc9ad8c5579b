import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { test } from 'node:test'
import { AuthgateConfigError, loadCoreConfig } from '../src/config.ts'

test('defaults with no configuration at all', () => {
  const c = loadCoreConfig({})
  assert.equal(c.port, 8080)
  assert.equal(c.host, '0.0.0.0')
  assert.equal(c.backendUrl.href, 'http://localhost:9999/')
  assert.equal(c.prefix, '/auth')
  assert.equal(c.bodyLimit, 1024 * 1024)
  assert.equal(c.backendTimeoutMs, 15_000)
  assert.deepEqual(c.trustedProxies, [])
})

test('values are parsed', () => {
  const c = loadCoreConfig({
    PORT: '9000',
    HOST: '127.0.0.1',
    AUTHGATE_BACKEND_URL: 'https://abc.supabase.co/auth/v1/',
    AUTHGATE_PREFIX: '/auth/v1/',
    AUTHGATE_BODY_LIMIT: '512kb',
    AUTHGATE_BACKEND_TIMEOUT: '2.5s',
    AUTHGATE_TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.1 ,::1,fd00::/8',
  })
  assert.equal(c.port, 9000)
  assert.equal(c.backendUrl.pathname, '/auth/v1')
  assert.equal(c.prefix, '/auth/v1')
  assert.equal(c.bodyLimit, 512_000)
  assert.equal(c.backendTimeoutMs, 2500)
  assert.deepEqual(c.trustedProxies, ['10.0.0.0/8', '192.168.1.1', '::1', 'fd00::/8'])
  assert.equal(loadCoreConfig({ AUTHGATE_PREFIX: '' }).prefix, '')
})

const BAD: Array<[string, string]> = [
  ['PORT', 'eighty'],
  ['PORT', '70000'],
  ['AUTHGATE_BACKEND_URL', 'localhost:9999'],
  ['AUTHGATE_BACKEND_URL', 'ftp://x'],
  ['AUTHGATE_BACKEND_URL', 'http://x/?a=1'],
  ['AUTHGATE_PREFIX', 'auth'],
  ['AUTHGATE_PREFIX', '/a b'],
  ['AUTHGATE_BODY_LIMIT', 'big'],
  ['AUTHGATE_BODY_LIMIT', '0'],
  ['AUTHGATE_BACKEND_TIMEOUT', 'soon'],
  ['AUTHGATE_BACKEND_TIMEOUT', '0s'],
  ['AUTHGATE_TRUSTED_PROXIES', '10.0.0.0/33'],
  ['AUTHGATE_TRUSTED_PROXIES', 'proxy.local'],
  ['AUTHGATE_LOG_LEVEL', 'loud'],
]
for (const [name, value] of BAD) {
  test(`${name}=${value} is rejected naming the variable`, () => {
    assert.throws(
      () => loadCoreConfig({ [name]: value }),
      (err: unknown) => err instanceof AuthgateConfigError && err.option === name && err.message.startsWith(name),
    )
  })
}

test('the service refuses to start on a bad value and names the variable', async () => {
  const child = spawn(process.execPath, ['src/main.ts'], {
    env: { ...process.env, AUTHGATE_BACKEND_TIMEOUT: 'soon', PORT: '0' },
  })
  let stderr = ''
  child.stderr.on('data', (c) => (stderr += c))
  const code = await new Promise<number | null>((r) => child.on('exit', r))
  assert.equal(code, 2)
  assert.match(stderr, /AUTHGATE_BACKEND_TIMEOUT/)
})

test('the service starts from the environment and answers 502 on auth routes while no backend is reachable', async () => {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    PORT: '0',
    HOST: '127.0.0.1',
    AUTHGATE_BACKEND_URL: 'http://127.0.0.1:9',
  }
  const child = spawn(process.execPath, ['src/main.ts'], { env })
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (c) => {
        out += c
        const m = /"msg":"Server listening at http:\/\/127\.0\.0\.1:(\d+)"/.exec(out)
        if (m) resolve(Number(m[1]))
      })
      child.on('exit', (code) => reject(new Error(`exited ${code}`)))
    })
    const res = await fetch(`http://127.0.0.1:${port}/auth/settings`)
    assert.equal(res.status, 502)
    assert.equal((await res.json()).error_code, 'backend_unreachable')
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.on('exit', r))
  }
})
