import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { SUPABASE_AUTH_ERROR_CODES, SUPABASE_AUTH_OAUTH_ERRORS } from '../src/auth/error-codes.ts'
import { findSupabaseAuthBinary } from './support/supabase-auth-binary.ts'

// The error-code list of src/auth/error-codes.ts is a copy of Supabase Auth's; here it is compared
// with the source the server under test was built from (kept beside the binary by both build
// scripts: <dir>/bin/supabase-auth and <dir>/src), so moving to another commit shows what changed.

async function sourceDir(): Promise<{ dir: string } | { reason: string }> {
  const binary = await findSupabaseAuthBinary()
  if ('reason' in binary) return binary
  const dir = join(dirname(dirname(binary.path)), 'src')
  try {
    await readFile(join(dir, 'internal/api/apierrors/errorcode.go'))
    return { dir }
  } catch {
    return { reason: `no Supabase Auth source beside ${binary.path} (expected ${dir}); run npm run backend:build` }
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

test("the error codes are Supabase Auth's, as its source declares them", needsSource, async () => {
  const { dir } = source as { dir: string }
  const go = await readFile(join(dir, 'internal/api/apierrors/errorcode.go'), 'utf8')
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
