// Reads the reporter's lines (.ci/test-events.mjs) and prints what ran and what was skipped. A skip
// for want of Supabase Auth (no registry these machines reach serves it: the tests say so with the
// words below) is allowed and counted; any other skip or todo fails the run.
import console from 'node:console'
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import process from 'node:process'

const ABSENCE = 'needs Supabase Auth'
const events = readFileSync(process.argv[2], 'utf8')
  .split('\n')
  .filter((line) => line !== '')
  .map((line) => JSON.parse(line))
// A suite that ran is not a test: its line is there for its time.
const tests = events.filter((e) => !(e.suite && e.skip === null && e.todo === null))
const inE2e = (e) => relative(process.cwd(), e.file ?? '').startsWith('e2e/')
const skipped = tests.filter((e) => e.skip !== null)
const absent = skipped.filter((e) => typeof e.skip === 'string' && e.skip.startsWith(ABSENCE))
const otherSkips = skipped.filter((e) => !absent.includes(e))
const todos = tests.filter((e) => e.todo !== null)
const ran = tests.filter((e) => e.skip === null && e.todo === null)

console.log(
  `CI: ${ran.length} tests ran (${ran.filter(inE2e).length} of them end to end); skipped for want of ` +
    `Supabase Auth: ${absent.filter((e) => !e.suite).length} tests and ${absent.filter((e) => e.suite).length} ` +
    `whole suites; ${otherSkips.length} other skips, ${todos.length} todo`,
)
const reasons = new Map()
for (const e of absent) reasons.set(e.skip, (reasons.get(e.skip) ?? 0) + 1)
for (const [reason, count] of reasons) console.log(`CI:   ${count} × ${reason}`)
// The slowest files: the time of each file's top-level tests and suites (files run several at a time,
// so these overlap and do not add up to the step's time).
const fileMs = new Map()
for (const e of events.filter((x) => x.nesting === 0)) fileMs.set(e.file, (fileMs.get(e.file) ?? 0) + (e.ms ?? 0))
const slowest = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, 12)
console.log(
  `CI: slowest files: ${slowest.map(([f, ms]) => `${relative(process.cwd(), f)} ${(ms / 1000).toFixed(0)} s`).join(', ')}`,
)
if (otherSkips.length > 0 || todos.length > 0) {
  console.error('CI: every test but those needing Supabase Auth must run here:')
  for (const e of [...otherSkips, ...todos])
    console.error(`  ${relative(process.cwd(), e.file ?? '?')}: ${e.name} # ${e.skip ?? e.todo}`)
  process.exit(1)
}
