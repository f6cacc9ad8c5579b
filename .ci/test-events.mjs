// A node:test reporter for CI: one JSON line per finished test (and per suite) (file, name, whether it was skipped
// and why, its nesting and duration), from which .ci/run counts what ran and why anything was skipped, and the
// time each file took is summed (its top-level tests and suites, nesting 0). `npm test` runs the test runner more
// than once, and a reporter's destination is written from its start each time, so the lines are appended to the
// file CI_TEST_EVENTS names instead (the destination, standard output, gets nothing).
import { appendFileSync } from 'node:fs'
import process from 'node:process'

export default async function* testEvents(source) {
  const out = process.env.CI_TEST_EVENTS
  if (out === undefined || out === '') throw new Error('CI_TEST_EVENTS must name the file the events go to')
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const { file, name, skip, todo, details, nesting } = event.data
    // A skipped suite is reported once, its tests never: it is counted as one skip. A suite that ran is
    // kept for its time only.
    const suite = details?.type === 'suite'
    const ms = Math.round(details?.duration_ms ?? 0)
    const line = {
      file,
      name,
      suite,
      ok: event.type === 'test:pass',
      skip: skip ?? null,
      todo: todo ?? null,
      nesting,
      ms,
    }
    appendFileSync(out, `${JSON.stringify(line)}\n`)
  }
  yield* []
}
