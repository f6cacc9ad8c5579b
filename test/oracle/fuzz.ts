/**
 * `npm run fuzz`: generated requests through authgate's readers and the Go oracle (test/oracle/),
 * for as long as asked, in rounds of fresh seeds. Prints the count of requests and of differences;
 * each difference, shrunk to a smallest request, is printed and added to
 * test/oracle/regressions.json, which the test suite replays.
 *   npm run fuzz -- [--minutes 10] [--count N] [--seed S] [--round 2000]
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { stored, type StoredCase } from './generate.ts'
import { goBinary, GoOracle } from './go-oracle.ts'
import { tally } from './property.ts'
import { runOnce, seedOf } from './run.ts'

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    count: { type: 'string' },
    seed: { type: 'string' },
    round: { type: 'string', default: '2000' },
  },
})
const go = goBinary()
if (go === undefined) {
  console.error('npm run fuzz: no Go toolchain (set GO, or put go on the PATH)')
  process.exit(2)
}
const deadline = Date.now() + Number(values.minutes) * 60_000
const budget = values.count === undefined ? Infinity : Number(values.count)
const round = Number(values.round)
const file = new URL('./regressions.json', import.meta.url)
const oracle = GoOracle.start(go)
let seed = values.seed === undefined ? seedOf() ^ Date.now() : Number(values.seed)
let requests = 0
let found = 0
while (Date.now() < deadline && requests < budget) {
  const run = await runOnce(oracle, seed, Math.min(round, budget - requests))
  requests += run.requests
  if (run.found) {
    found++
    const { request } = run.found.case
    const why = run.found.differences.map((d) => d.what).join(', ')
    console.log(`difference (seed ${seed}): ${why}`)
    console.log(`  ${request.method} ${request.target} ${JSON.stringify(request.headers)}`)
    console.log(`  ${JSON.stringify(request.body.toString('latin1'))}`)
    console.log(`  ${JSON.stringify(run.found.differences)}`)
    const cases = JSON.parse(readFileSync(file, 'utf8')) as StoredCase[]
    cases.push(stored(run.found.case, `npm run fuzz, seed ${seed}: ${why}`))
    writeFileSync(file, JSON.stringify(cases, null, 2) + '\n')
  }
  seed = (seed + 1) | 0
  process.stdout.write(`\r${requests} requests, ${found} differences `)
}
await oracle.close()
console.log(
  `\n${requests} requests, ${found} differences (${tally.compared} read by authgate and compared, ${tally.refused} refused)`,
)
process.exitCode = found > 0 ? 1 : 0
