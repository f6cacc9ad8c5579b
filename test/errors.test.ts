import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import Fastify from 'fastify'
import { AuthgateError, ERRORS, errorBody, sendError, wantsNewErrorShape } from '../src/errors.ts'

test('every error code is documented in the README with its status', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  for (const [code, { status }] of Object.entries(ERRORS)) {
    assert.match(readme, new RegExp(`\\| \`${code}\` \\| ${status} \\|`), code)
  }
})

test('error shapes', () => {
  assert.deepEqual(errorBody('bad_json', false, 'x'), { code: 400, error_code: 'bad_json', msg: 'x' })
  assert.deepEqual(errorBody('bad_json', true, 'x'), { code: 'bad_json', message: 'x' })
})

test('API version negotiation', () => {
  assert.equal(wantsNewErrorShape(undefined), false)
  assert.equal(wantsNewErrorShape('2024-01-01'), true)
  assert.equal(wantsNewErrorShape('2025-06-30'), true)
  assert.equal(wantsNewErrorShape(' 2024-01-01 '), true)
  assert.equal(wantsNewErrorShape('2023-12-31'), false)
  assert.equal(wantsNewErrorShape('2024-1-1'), false)
  assert.equal(wantsNewErrorShape('garbage'), false)
})

test('an AuthgateError is rendered by the one writer: its status, fields and headers, in both shapes', async () => {
  const app = Fastify()
  app.get('/x', (request, reply) =>
    sendError(
      request,
      reply,
      new AuthgateError('validation_failed', 'Invalid email format', {
        status: 422,
        fields: { hint: 'x' },
        headers: { 'Retry-After': '1' },
      }),
    ),
  )
  try {
    const legacy = await app.inject({ method: 'GET', url: '/x' })
    assert.equal(legacy.statusCode, 422)
    assert.equal(legacy.headers['content-type'], 'application/json')
    assert.equal(legacy.headers['x-sb-error-code'], 'validation_failed')
    assert.equal(legacy.headers['retry-after'], '1')
    assert.equal(legacy.headers.vary, 'Origin')
    assert.deepEqual(legacy.json(), {
      code: 422,
      error_code: 'validation_failed',
      msg: 'Invalid email format',
      hint: 'x',
    })
    const current = await app.inject({ method: 'GET', url: '/x', headers: { 'x-supabase-api-version': '2024-01-01' } })
    assert.equal(current.headers['x-supabase-api-version'], '2024-01-01')
    assert.deepEqual(current.json(), { code: 'validation_failed', message: 'Invalid email format', hint: 'x' })
  } finally {
    await app.close()
  }
})
