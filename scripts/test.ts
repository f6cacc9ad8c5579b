/**
 * `npm test`: the whole suite, in three steps run one after the other.
 *
 * 1. documents: the OpenAPI documents linted by the outside tools, once each (test/openapi/lint-documents.ts).
 *    Apart from the test files so that each tool runs once over both renderings and outside the coverage
 *    measurement, which every process started under the test runner inherits.
 * 2. files: every test file of test/ and e2e/ but the timing-bound ones, several at a time
 *    (AUTHGATE_TEST_CONCURRENCY, default 3; see docs/decisions.md D116), with the coverage report of
 *    src/ and its floor. These files share no server, database or key: each starts its own servers
 *    on ports the kernel picks, its own database (a copy of one template) and its own Redis key
 *    prefix. They may share a process: the unit files of test/ run one after another in one process
 *    (test/shared-process.ts, D124), which starts first; the end-to-end files, and the unit files in
 *    OWN_PROCESS_FILES, each get a process of their own.
 * 3. timed: the files that measure time or memory (SERIAL_FILES, each with the reason), one at a time
 *    on a machine the other files have left, without coverage.
 *
 * Every step runs; the command fails when any does. Each step's time is printed as
 * `npm test: <step> <seconds> s` (.ci/run shows them among its stage times). Options after `--`
 * (`npm test -- --test-name-pattern=…`) go to the test runner of steps 2 and 3.
 */
import { spawn } from 'node:child_process'
import { globSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../', import.meta.url))

const COVERAGE = [
  '--experimental-test-coverage',
  '--test-coverage-include=src/**/*.ts',
  '--test-coverage-lines=95',
  '--test-coverage-branches=85',
  '--test-coverage-functions=90',
]

/**
 * The files run alone, after the others: each measures time or memory (or drives the machine hard
 * enough to disturb such a measurement), so a file running beside it makes it fail when the machine
 * is slow, not when authgate is wrong.
 */
export const SERIAL_FILES: ReadonlyArray<{ file: string; why: string }> = [
  { file: 'test/http/slow-clients.test.ts', why: 'counts errors of normal traffic during a flood of slow clients' },
  { file: 'test/shutdown.test.ts', why: 'times the drain of `npm start` on SIGTERM' },
  { file: 'test/shutdown-signals.test.ts', why: 'times the drain of each signal' },
  { file: 'test/ratelimit/redis-outage.test.ts', why: 'a 100 ms store timeout across a Redis restart' },
  { file: 'test/ratelimit/redis-chaos.test.ts', why: 'decisions under Redis kills, with timeouts' },
  { file: 'test/ratelimit/failover.test.ts', why: 'Sentinel and Cluster failovers within deadlines' },
  { file: 'test/http/client-errors.test.ts', why: 'a dribbling client is cut between 2 and 4.5 s' },
  { file: 'test/ratelimit/store-contract.test.ts', why: 'probes the rate edge within 600 ms and over 1.2 s' },
  { file: 'test/services/scavenge.test.ts', why: 'the memory of the relay while it streams' },
  { file: 'e2e/services-memory.test.ts', why: 'the RSS of 100 MiB streamed each way' },
  { file: 'e2e/chaos.test.ts', why: 'floods and kills with deadlines, against Supabase Auth' },
]

/**
 * The unit files that keep a process of their own in the files step rather than joining the shared
 * one: each spends most of its time waiting on programs it starts, which it does best beside the
 * other files than in the shared process's line.
 */
export const OWN_PROCESS_FILES: ReadonlyArray<{ file: string; why: string }> = [
  {
    file: 'test/package/install.test.ts',
    why: 'packs, installs and compiles the package with npm and tsc (30 to 60 s)',
  },
  {
    file: 'test/package/production-install.test.ts',
    why: 'clones the repository and installs it with npm ci --omit=dev, then starts it (30 to 60 s)',
  },
  { file: 'test/cluster.test.ts', why: 'starts a Redis Cluster and its replicas and waits for them' },
  {
    file: 'test/deploy/monitoring.test.ts',
    why: 'starts authgate and Prometheus, loads one and waits for the other to scrape it',
  },
  { file: 'test/docs-server/docs-page-chromium.test.ts', why: 'drives the reference page in Chromium' },
  { file: 'test/ratelimit/redis-tls.test.ts', why: 'makes certificates and starts Redis servers with TLS' },
  {
    file: 'test/oracle/oracle.test.ts',
    why: 'builds the Go oracle with the Go toolchain and asks it about 20,000 generated requests (20 to 40 s)',
  },
]

/** The module test/shared-process.ts, which imports the shared files in one process. */
export const SHARED_PROCESS_ENTRY = 'test/shared-process.ts'

/** The test files of the suite, in a stable order. */
export function testFiles(): string[] {
  return [...globSync('test/**/*.test.ts', { cwd: root }), ...globSync('e2e/**/*.test.ts', { cwd: root })].sort()
}

/** How many files step 2 runs at a time: the variable when set to a positive integer, else 3. */
export function concurrency(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.AUTHGATE_TEST_CONCURRENCY
  if (text === undefined || text === '') return 3
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`AUTHGATE_TEST_CONCURRENCY must be a positive integer, not "${text}"`)
  return n
}

/**
 * The files the shared process runs, one after another: the unit files of test/ that are neither
 * timed nor kept in a process of their own. Starting Node.js, loading Fastify and authgate and
 * writing a coverage record cost about a second of CPU per process; one process for these 125-odd
 * files costs that once (D124).
 */
export function sharedProcessFiles(files: string[] = testFiles()): string[] {
  const apart = new Set([...SERIAL_FILES, ...OWN_PROCESS_FILES].map((s) => s.file))
  return files.filter((f) => f.startsWith('test/') && !apart.has(f))
}

export function steps(files: string[], env: NodeJS.ProcessEnv = process.env) {
  const serial = new Set(SERIAL_FILES.map((s) => s.file))
  for (const [name, list] of [
    ['SERIAL_FILES', SERIAL_FILES],
    ['OWN_PROCESS_FILES', OWN_PROCESS_FILES],
  ] as const) {
    const missing = list.map((s) => s.file).filter((f) => !files.includes(f))
    if (missing.length > 0) throw new Error(`${name} names files that do not exist: ${missing.join(', ')}`)
  }
  const shared = new Set(sharedProcessFiles(files))
  return [
    {
      name: 'documents',
      args: (_extra: string[]) => ['--conditions=authgate-source', 'test/openapi/lint-documents.ts'],
    },
    {
      name: 'files',
      args: (extra: string[]) => [
        '--conditions=authgate-source',
        '--test',
        `--test-concurrency=${concurrency(env)}`,
        ...COVERAGE,
        ...extra,
        // The runner starts files in the sorted order of the paths it is given: the shared process,
        // the longest of them, is named by its absolute path so that it sorts first and starts at once
        // instead of last, alone at the end of the step.
        join(root, SHARED_PROCESS_ENTRY),
        ...files.filter((f) => !serial.has(f) && !shared.has(f)),
      ],
    },
    {
      name: 'timed',
      args: (extra: string[]) => [
        '--conditions=authgate-source',
        '--test',
        '--test-concurrency=1',
        ...extra,
        ...files.filter((f) => serial.has(f)),
      ],
    },
  ]
}

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
  for (const step of steps(testFiles())) {
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
