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
const inE2e = (e) => relative(process.cwd(), e.file ?? '').startsWith('e2e/')
const skipped = events.filter((e) => e.skip !== null)
const absent = skipped.filter((e) => typeof e.skip === 'string' && e.skip.startsWith(ABSENCE))
const otherSkips = skipped.filter((e) => !absent.includes(e))
const todos = events.filter((e) => e.todo !== null)
const ran = events.filter((e) => e.skip === null && e.todo === null)

console.log(
  `CI: ${ran.length} tests ran (${ran.filter(inE2e).length} of them end to end); skipped for want of ` +
    `Supabase Auth: ${absent.filter((e) => !e.suite).length} tests and ${absent.filter((e) => e.suite).length} ` +
    `whole suites; ${otherSkips.length} other skips, ${todos.length} todo`,
)
const reasons = new Map()
for (const e of absent) reasons.set(e.skip, (reasons.get(e.skip) ?? 0) + 1)
for (const [reason, count] of reasons) console.log(`CI:   ${count} × ${reason}`)
if (otherSkips.length > 0 || todos.length > 0) {
  console.error('CI: every test but those needing Supabase Auth must run here:')
  for (const e of [...otherSkips, ...todos])
    console.error(`  ${relative(process.cwd(), e.file ?? '?')}: ${e.name} # ${e.skip ?? e.todo}`)
  process.exit(1)
}
