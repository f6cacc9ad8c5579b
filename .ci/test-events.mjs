// A node:test reporter for CI: appends one JSON line per finished test (and per skipped suite) to the
// file CI_TEST_EVENTS names (file, name, whether it was skipped and why), from which .ci/run counts
// what ran and why anything was skipped. Appended, not written as the reporter's output: npm test
// runs node --test twice (the unit half, then the end-to-end half), into the same file.
import { appendFileSync } from 'node:fs'
import process from 'node:process'

export default async function* testEvents(source) {
  const file = process.env.CI_TEST_EVENTS
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const { file: testFile, name, skip, todo, details } = event.data
    // A skipped suite is reported once, its tests never: it is counted as one skip.
    const suite = details?.type === 'suite'
    if (suite && skip === undefined && todo === undefined) continue
    const line = { file: testFile, name, suite, ok: event.type === 'test:pass', skip: skip ?? null, todo: todo ?? null }
    if (file !== undefined) appendFileSync(file, `${JSON.stringify(line)}\n`)
  }
  yield ''
}
