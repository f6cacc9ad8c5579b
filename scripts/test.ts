/**
 * `npm test`: the whole suite, in two steps run one after the other.
 *
 * 1. documents: the OpenAPI documents linted by the outside tools, once each (test/openapi/lint-documents.ts).
 *    Apart from the test files so that each tool runs once over both renderings and outside the coverage
 *    measurement, which every process started under the test runner inherits.
 * 2. files: every test file of test/ and e2e/, one at a time (see docs/decisions.md D71, D92), with the
 *    coverage report of src/ and its floor.
 *
 * Both steps always run; the command fails when either does. Each step's time is printed as
 * `npm test: <step> <seconds> s` (.ci/run shows them among its stage times). Options after `--`
 * (`npm test -- --test-name-pattern=…`) go to the test runner of step 2.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../', import.meta.url))

const COVERAGE = [
  '--experimental-test-coverage',
  '--test-coverage-include=src/**/*.ts',
  '--test-coverage-lines=95',
  '--test-coverage-branches=85',
  '--test-coverage-functions=90',
]

export const STEPS: ReadonlyArray<{ name: string; args: (extra: string[]) => string[] }> = [
  { name: 'documents', args: () => ['--conditions=authgate-source', 'test/openapi/lint-documents.ts'] },
  {
    name: 'files',
    args: (extra) => [
      '--conditions=authgate-source',
      '--test',
      '--test-concurrency=1',
      ...COVERAGE,
      ...extra,
      'test/**/*.test.ts',
      'e2e/**/*.test.ts',
    ],
  },
]

function runNode(args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit' })
    child.once('error', () => resolve(1))
    child.once('exit', (code) => resolve(code ?? 1))
  })
}

async function main(): Promise<number> {
  const extra = process.argv.slice(2)
  const failed: string[] = []
  const times: string[] = []
  for (const step of STEPS) {
    const start = performance.now()
    const code = await runNode(step.args(extra))
    const seconds = ((performance.now() - start) / 1000).toFixed(1)
    times.push(`npm test: ${step.name} ${seconds} s${code === 0 ? '' : ` (failed, exit ${code})`}`)
    if (code !== 0) failed.push(step.name)
  }
  for (const line of times) console.log(line)
  if (failed.length > 0) console.error(`npm test: failed: ${failed.join(', ')}`)
  return failed.length === 0 ? 0 : 1
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main()
