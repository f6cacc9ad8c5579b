import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { assertDatabaseName } from '../../scripts/supabase-auth/postgres.ts'
import { TEMPLATE_PREFIX, templateName } from '../../e2e/support/auth-template.ts'

test('the migrated template is named after the binary’s content, not its path', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authgate-template-name-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const [a, sameAsA, b] = ['a', 'copy-of-a', 'b'].map((name) => join(dir, name))
  await writeFile(a!, 'migrations of one build')
  await writeFile(sameAsA!, 'migrations of one build')
  await writeFile(b!, 'migrations of another build')

  const names = await Promise.all([a!, sameAsA!, b!].map((path) => templateName(path)))
  assert.equal(names[0], names[1], 'one content, one template wherever the binary lies')
  assert.notEqual(names[0], names[2], 'another build migrates a template of its own')
  for (const name of names) {
    assert.ok(name.startsWith(TEMPLATE_PREFIX))
    assertDatabaseName(name)
    assertDatabaseName(`${name}_new`)
  }
})
