import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { test } from 'node:test'

/** What the published package holds and promises: its licence, its maps, its documented exports. */

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8')
const pkg = JSON.parse(read('package.json')) as { license: string; files: string[] }

test('the package ships the licence package.json names', () => {
  assert.equal(pkg.license, 'MIT')
  const licence = read('LICENSE')
  assert.match(licence, /^MIT License/)
  assert.match(licence, /Copyright \(c\) authgate contributors/)
})

test('the build writes no source map pointing at sources the package does not ship', () => {
  const build = JSON.parse(read('tsconfig.build.json')) as { compilerOptions: Record<string, unknown> }
  const shipsSources = pkg.files.includes('src')
  if (!shipsSources) {
    assert.equal(build.compilerOptions.sourceMap, false)
    assert.notEqual(build.compilerOptions.declarationMap, true)
  }
})

test('every runtime export is named in the README or docs/', async () => {
  const docs = [
    read('README.md'),
    ...readdirSync(new URL('../docs/', import.meta.url))
      .filter((f) => f.endsWith('.md') && f !== 'decisions.md')
      .map((f) => read(`docs/${f}`)),
  ].join('\n')
  const exports = Object.keys(await import('../src/index.ts'))
  const undocumented = exports.filter((name) => !new RegExp(`\\b${name}\\b`).test(docs))
  assert.deepEqual(undocumented, [])
})
