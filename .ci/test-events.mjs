// A node:test reporter for CI: one JSON line per finished test (and per skipped suite) (file, name, whether it was skipped
// and why), from which .ci/run counts what ran and why anything was skipped.
export default async function* testEvents(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const { file, name, skip, todo, details } = event.data
    // A skipped suite is reported once, its tests never: it is counted as one skip.
    const suite = details?.type === 'suite'
    if (suite && skip === undefined && todo === undefined) continue
    yield `${JSON.stringify({ file, name, suite, ok: event.type === 'test:pass', skip: skip ?? null, todo: todo ?? null })}\n`
  }
}
