import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { SUPABASE_AUTH_ERROR_CODES, SUPABASE_AUTH_OAUTH_ERRORS } from '../src/auth/error-codes.ts'
import { ABSENCE, builtSource, SOURCE_DIR_ENV } from '../scripts/supabase-auth/binary.ts'

// The error-code list of src/auth/error-codes.ts is a copy of Supabase Auth's. Where a source tree
// of the pinned commit is at hand (AUTHGATE_SUPABASE_AUTH_SOURCE_DIR, or the verified source npm run
// backend:build keeps beside its build), the list is compared with it, so moving to another commit
// shows what changed; without one, only the committed list itself is checked.

const ERRORCODE_GO = 'internal/api/apierrors/errorcode.go'

async function sourceDir(): Promise<{ dir: string } | { reason: string }> {
  const given = process.env[SOURCE_DIR_ENV]
  const dir = given !== undefined && given !== '' ? given : builtSource()
  try {
    await readFile(join(dir, ERRORCODE_GO))
    return { dir }
  } catch {
    return {
      reason:
        `${ABSENCE}'s source: no ${ERRORCODE_GO} under ${dir}; set ${SOURCE_DIR_ENV} to a source tree of ` +
        'the pinned commit, or run npm run backend:build (it keeps the verified source)',
    }
  }
}

async function* goFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* goFiles(path)
    else if (entry.name.endsWith('.go') && !entry.name.endsWith('_test.go')) yield path
  }
}

const source = await sourceDir()
const needsSource = { skip: 'reason' in source ? source.reason : false }

test('the committed error-code lists are well formed', () => {
  const codes: readonly string[] = SUPABASE_AUTH_ERROR_CODES
  const oauth: readonly string[] = SUPABASE_AUTH_OAUTH_ERRORS
  assert.equal(new Set(codes).size, codes.length, 'no error code twice')
  assert.equal(new Set(oauth).size, oauth.length, 'no OAuth error twice')
  for (const code of codes) assert.match(code, /^[a-z][a-z0-9_]*$/, `${code} is a snake_case code`)
  // The OAuth values are what Supabase Auth writes, one of them with a space ("invalid nonce").
  for (const code of oauth) assert.match(code, /^[a-z][a-z0-9_ ]*$/, code)
  assert.ok(codes.length > 100, `only ${codes.length} codes`)
  for (const code of ['invalid_credentials', 'over_email_send_rate_limit', 'session_not_found', 'validation_failed'])
    assert.ok(codes.includes(code), code)
  for (const code of ['access_denied', 'invalid nonce']) assert.ok(oauth.includes(code), code)
})

test("the error codes are Supabase Auth's, as its source declares them", needsSource, async () => {
  const { dir } = source as { dir: string }
  const go = await readFile(join(dir, ERRORCODE_GO), 'utf8')
  const declared = [...go.matchAll(/ErrorCode = "([^"]+)"/g)].map((m) => m[1])
  assert.ok(declared.length > 100, `only ${declared.length} codes found`)
  assert.deepEqual([...SUPABASE_AUTH_ERROR_CODES].sort(), [...new Set(declared)].sort())
})

test("the OAuth error values are the ones Supabase Auth's source gives", needsSource, async () => {
  const { dir } = source as { dir: string }
  const found = new Set<string>()
  for await (const file of goFiles(join(dir, 'internal'))) {
    for (const m of (await readFile(file, 'utf8')).matchAll(/NewOAuthError\("([^"]+)"/g)) found.add(m[1]!)
  }
  assert.deepEqual([...SUPABASE_AUTH_OAUTH_ERRORS].sort(), [...found].sort())
})
