import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isAbsolute, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  concurrency,
  OWN_PROCESS_FILES,
  SERIAL_FILES,
  SHARED_PROCESS_ENTRY,
  sharedProcessFiles,
  steps,
  testFiles,
} from '../../scripts/test.ts'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** The files a step's arguments name (the test runner's options start with `--`). */
function filesOf(args: string[]): string[] {
  return args.filter((a) => !a.startsWith('--'))
}

describe('npm test (scripts/test.ts)', () => {
  it('runs every test file exactly once: the timing-bound ones alone, the rest several at a time', () => {
    const files = testFiles()
    assert.ok(files.includes('test/scripts/test-command.test.ts'))
    assert.ok(files.some((f) => f.startsWith('e2e/')))
    const [documents, parallel, timed] = steps(files, {})
    assert.deepEqual(documents!.args([]), ['--conditions=authgate-source', 'test/openapi/lint-documents.ts'])
    const [entry, ...inParallel] = filesOf(parallel!.args([]))
    const alone = filesOf(timed!.args([]))
    // The shared process comes first, by its absolute path, and stands for the files it imports.
    assert.ok(isAbsolute(entry!))
    assert.equal(relative(root, entry!), SHARED_PROCESS_ENTRY)
    assert.ok(inParallel.every((f) => !isAbsolute(f)) && [...inParallel].sort()[0]! > entry!)
    const shared = sharedProcessFiles(files)
    assert.deepEqual([...shared, ...inParallel, ...alone].sort(), files)
    assert.deepEqual(alone, SERIAL_FILES.map((s) => s.file).sort())
    // The end-to-end files and the ones kept apart have processes of their own; the rest share one.
    assert.ok(shared.length > 100 && shared.every((f) => f.startsWith('test/')))
    assert.deepEqual(
      inParallel.filter((f) => f.startsWith('test/')),
      OWN_PROCESS_FILES.map((s) => s.file).sort(),
    )
    assert.ok(parallel!.args([]).includes('--test-concurrency=3'))
    assert.ok(timed!.args([]).includes('--test-concurrency=1'))
  })

  it('holds the coverage floor in the step that runs nearly every file, and passes options to both', () => {
    const [, parallel, timed] = steps(testFiles(), {})
    const args = parallel!.args(['--test-name-pattern=x'])
    assert.ok(args.includes('--experimental-test-coverage'))
    assert.ok(args.some((a) => a.startsWith('--test-coverage-lines=')))
    assert.ok(args.includes('--test-name-pattern=x'))
    assert.ok(timed!.args(['--test-name-pattern=x']).includes('--test-name-pattern=x'))
  })

  it('refuses a serial list that names a file that is gone (a rename would run it beside others)', () => {
    assert.throws(() => steps(['test/other.test.ts'], {}), /SERIAL_FILES names files that do not exist: test\/http/)
    const withoutOwn = testFiles().filter((f) => f !== OWN_PROCESS_FILES[0]!.file)
    assert.throws(() => steps(withoutOwn, {}), /OWN_PROCESS_FILES names files that do not exist: test\/package/)
  })

  it('takes the concurrency from AUTHGATE_TEST_CONCURRENCY, refusing what is not a positive integer', () => {
    assert.equal(concurrency({}), 3)
    assert.equal(concurrency({ AUTHGATE_TEST_CONCURRENCY: '' }), 3)
    assert.equal(concurrency({ AUTHGATE_TEST_CONCURRENCY: '1' }), 1)
    assert.ok(steps(testFiles(), { AUTHGATE_TEST_CONCURRENCY: '5' })[1]!.args([]).includes('--test-concurrency=5'))
    for (const bad of ['0', '-1', '1.5', 'two'])
      assert.throws(() => concurrency({ AUTHGATE_TEST_CONCURRENCY: bad }), /must be a positive integer/)
  })

  it('gives a reason for each file it runs alone or in a process of its own', () => {
    for (const { file, why } of [...SERIAL_FILES, ...OWN_PROCESS_FILES]) assert.ok(why.length > 10, file)
  })
})
