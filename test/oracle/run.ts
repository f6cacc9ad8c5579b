/**
 * Runs generated requests through authgate's readers and the Go oracle, and reports those on which
 * they differ (shrunk by fast-check to a smallest such request). Used by test/oracle/oracle.test.ts
 * (a fixed budget per run) and by `npm run fuzz` (test/oracle/fuzz.ts: for as long as asked).
 */
import { execFileSync } from 'node:child_process'
import fc from 'fast-check'
import { routeName } from '../../src/auth/routes/index.ts'
import { anyCase, BODY_ROUTES, type Case } from './generate.ts'
import type { GoOracle } from './go-oracle.ts'
import { differences, type Difference } from './property.ts'

/** Where authgate's reading of one case differs from Go's. */
export async function caseDifferences(oracle: GoOracle, c: Case): Promise<Difference[]> {
  const route = BODY_ROUTES.find((r) => routeName(r) === c.route)
  if (route === undefined) throw new Error(`no route ${c.route}`)
  const reading = await oracle.read(c.route, c.request)
  return differences(oracle, route, c.request, reading)
}

/** The run's seed: AUTHGATE_ORACLE_SEED, else the commit's first 32 bits, else 1. */
export function seedOf(env: NodeJS.ProcessEnv = process.env): number {
  if (env.AUTHGATE_ORACLE_SEED) return Number(env.AUTHGATE_ORACLE_SEED)
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    return parseInt(head.slice(0, 8), 16) | 0
  } catch {
    return 1
  }
}

export interface Found {
  case: Case
  differences: Difference[]
  seed: number
}

/**
 * `runs` generated requests from `seed`: the number run, and the first difference found (shrunk),
 * if any. fast-check stops at a failing request and shrinks it.
 */
export async function runOnce(
  oracle: GoOracle,
  seed: number,
  runs: number,
): Promise<{ requests: number; found?: Found }> {
  let last: Difference[] = []
  const details = await fc.check(
    fc.asyncProperty(anyCase, async (c) => {
      last = await caseDifferences(oracle, c)
      return last.length === 0
    }),
    { seed, numRuns: runs, endOnFailure: false },
  )
  if (!details.failed || details.counterexample === null) return { requests: details.numRuns }
  const [c] = details.counterexample
  return { requests: details.numRuns, found: { case: c, differences: await caseDifferences(oracle, c), seed } }
}
