import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { jsonObjects, lintRenderings } from './lint-documents.ts'

// What the step of npm test that lints the documents makes of the tools' reports: an error in one of
// the documents linted together is found, named after its document, and the clean one adds none.
const clean = {
  openapi: '3.1.0',
  info: {
    title: 'clean',
    version: '1',
    description: 'A document without problems.',
    license: { name: 'MIT', identifier: 'MIT' },
  },
  servers: [{ url: 'https://example.com' }],
  tags: [{ name: 'things', description: 'Things.' }],
  paths: {
    '/things': {
      get: {
        operationId: 'listThings',
        summary: 'List things',
        description: 'Lists things.',
        tags: ['things'],
        security: [],
        responses: { '200': { description: 'The things.' }, '400': { description: 'A bad request.' } },
      },
    },
  },
}
// A path parameter that is not declared: an error for both tools.
const broken = {
  ...clean,
  info: { ...clean.info, title: 'broken' },
  paths: { '/things/{id}': clean.paths['/things'] },
}

test('the document linters fail on an error and name the document that holds it, not the clean one linted with it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authgate-lint-documents-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const files = [join(dir, 'clean.json'), join(dir, 'broken.json')]
  await writeFile(files[0]!, JSON.stringify(clean))
  await writeFile(files[1]!, JSON.stringify(broken))

  for (const findings of await Promise.all(lintRenderings(files))) {
    assert.ok(findings.errors.length > 0, `${findings.tool} found no error`)
    for (const error of findings.errors) assert.match(error, /^broken\.json: \S+/, `${findings.tool}: ${error}`)
    t.diagnostic(`${findings.tool}: ${findings.errors.join('; ')}`)
  }
})

test('reports printed one after the other are read one by one, braces in strings included', () => {
  const text = '{"a":1,"s":"}{\\"x"}{"b":{"c":[1,{}]}}\n{"d":"\\\\"}'
  assert.deepEqual(jsonObjects(text), [{ a: 1, s: '}{"x' }, { b: { c: [1, {}] } }, { d: '\\' }])
})
