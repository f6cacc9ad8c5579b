import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { ERRORS, errorBody, wantsNewErrorShape } from '../src/errors.ts'

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
