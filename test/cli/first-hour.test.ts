import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { loadCoreConfig } from '../../src/config.ts'
import { didYouMean } from '../../src/core/did-you-mean.ts'
import { parseRedisUrl } from '../../src/core/redis-url.ts'
import { loadPublicUrl } from '../../src/settings.ts'
import { withFakeBackend } from '../support/app.ts'

const ROOT = new URL('../../', import.meta.url)
const COMMANDS = ['dev', 'doctor', '--help', '--version']

test('a mistyped command is answered with the nearest one, an unrelated word with none', () => {
  assert.equal(didYouMean('doctr', COMMANDS), 'doctor')
  assert.equal(didYouMean('docter', COMMANDS), 'doctor')
  assert.equal(didYouMean('DOCTOR', COMMANDS), 'doctor')
  assert.equal(didYouMean('--hlep', COMMANDS), '--help')
  assert.equal(didYouMean('--verison', COMMANDS), '--version')
  assert.equal(didYouMean('deb', COMMANDS), 'dev')
  // Too far to be a typo: no suggestion rather than a misleading one.
  for (const word of ['serve', 'x', '--port', 'start', 'doc']) assert.equal(didYouMean(word, COMMANDS), undefined, word)
  // The word itself is not a typo of itself.
  assert.equal(didYouMean('dev', ['dev']), undefined)
})

test('`authgate doctr` suggests `doctor`, and `--help` lists `dev`', () => {
  const env = { PATH: process.env.PATH ?? '' }
  const typo = spawnSync(process.execPath, ['bin/authgate.js', 'doctr'], {
    cwd: ROOT,
    encoding: 'utf8',
    env,
    timeout: 60_000,
  })
  assert.equal(typo.status, 2)
  assert.ok(typo.stderr.startsWith('authgate: unknown argument "doctr" (did you mean "doctor"?)\n'), typo.stderr)
  const help = spawnSync(process.execPath, ['bin/authgate.js', '--help'], { cwd: ROOT, encoding: 'utf8', env })
  assert.equal(help.status, 0)
  assert.match(help.stdout, /^ {7}authgate dev /m)
})

test('a URL setting that is not http(s) is quoted whole, with the fix for a missing scheme', () => {
  const error = (env: Record<string, string>) => {
    try {
      loadCoreConfig(env)
    } catch (err) {
      return (err as Error).message
    }
    assert.fail('accepted')
  }
  assert.equal(
    error({ AUTHGATE_BACKEND_URL: 'localhost:9999' }),
    'AUTHGATE_BACKEND_URL: must be an http or https URL, got "localhost:9999" (add the scheme: http://localhost:9999)',
  )
  assert.equal(
    error({ AUTHGATE_BACKEND_URL: ' auth.internal ' }),
    'AUTHGATE_BACKEND_URL: not a valid URL: "auth.internal" (add the scheme: http://auth.internal)',
  )
  assert.equal(
    error({ AUTHGATE_BACKEND_URL: 'ftp://files.example.com/x' }),
    'AUTHGATE_BACKEND_URL: must be an http or https URL, got "ftp://files.example.com/x"',
  )
  // A password in the value is not repeated into the log.
  const leaked = error({ AUTHGATE_BACKEND_URL: 'postgres://app:s3cret@db:5432/auth' })
  assert.match(leaked, /got "postgres:\/\/\*\*\*@db:5432\/auth"/)
  assert.throws(() => loadPublicUrl({ AUTHGATE_PUBLIC_URL: 'api.example.com:443' }), {
    message:
      'AUTHGATE_PUBLIC_URL: must be an http or https URL, got "api.example.com:443" (add the scheme: http://api.example.com:443)',
  })
  assert.throws(() => parseRedisUrl('cache:6379'), {
    message:
      'must be redis://, rediss://, redis+sentinel:// or redis+cluster:// (with rediss+ for TLS), got "cache:6379" (add the scheme: redis://cache:6379)',
  })
  for (const url of ['user:hunter2@cache:6379', 'http://user:p@ss@cache:6379/0']) {
    assert.throws(
      () => parseRedisUrl(url),
      (err: Error) => !/hunter2|p@ss|ss@/.test(err.message) && err.message.includes('***@cache:6379'),
      url,
    )
  }
})

test("the service answers every unrouted path with the gateway's error body; the plain app keeps Fastify's", async (t) => {
  for (const prefix of ['/auth', '']) {
    await t.test(`prefix ${JSON.stringify(prefix)}`, async () => {
      const service = await withFakeBackend({ prefix }, { answerUnrouted: true })
      try {
        for (const url of ['/', '/favicon.ico', '/api/things?x=1', `${prefix}/admin/users`]) {
          const res = await service.app.inject({ url })
          assert.equal(res.statusCode, 404, url)
          assert.equal(res.headers['x-sb-error-code'] ?? res.json().error_code, 'not_found', url)
          assert.equal(res.json().msg, `No route for GET ${url.split('?')[0]}`)
          assert.ok(res.headers['x-request-id'], 'the request id is named')
        }
        const newShape = await service.app.inject({ url: '/', headers: { 'x-supabase-api-version': '2024-01-01' } })
        assert.deepEqual(newShape.json(), { code: 'not_found', message: 'No route for GET /' })
        // An auth route's path asked with another method: 405 with Allow, under the prefix or not.
        const wrong = await service.app.inject({ method: 'DELETE', url: `${prefix}/token` })
        assert.equal(wrong.statusCode, 405)
        assert.equal(wrong.headers.allow, 'POST')
        assert.equal(service.backend.requests.length, 0)
      } finally {
        await service.close()
      }
    })
  }
  const library = await withFakeBackend()
  try {
    const res = await library.app.inject({ url: '/' })
    assert.equal(res.statusCode, 404)
    assert.deepEqual(res.json(), { message: 'Route GET:/ not found', error: 'Not Found', statusCode: 404 })
  } finally {
    await library.close()
  }
})
