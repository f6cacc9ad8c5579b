// A node:test reporter for CI: one JSON line per finished test (and per skipped suite) (file, name, whether it was skipped
// and why, its nesting and duration), from which .ci/run counts what ran and why anything was skipped, and the
// time each file took is summed (its top-level tests and suites, nesting 0).
export default async function* testEvents(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const { file, name, skip, todo, details, nesting } = event.data
    // A skipped suite is reported once, its tests never: it is counted as one skip. A suite that ran is
    // kept for its time only.
    const suite = details?.type === 'suite'
    const ms = Math.round(details?.duration_ms ?? 0)
    yield `${JSON.stringify({ file, name, suite, ok: event.type === 'test:pass', skip: skip ?? null, todo: todo ?? null, nesting, ms })}\n`
  }
}
