/**
 * The unit files of `npm test`'s files step, run one after another in this one process
 * (scripts/test.ts names them: sharedProcessFiles). Each file still reports its tests under its own
 * path; what they share is the cost of starting Node.js and loading what they import, once instead
 * of once per file. Run directly, it runs them all: `node --conditions=authgate-source --test
 * test/shared-process.ts`.
 *
 * A file that fails to load fails a test named after it, and the files after it still run.
 */
import { test } from 'node:test'
import { sharedProcessFiles } from '../scripts/test.ts'

const root = new URL('../', import.meta.url)

for (const file of sharedProcessFiles()) {
  try {
    await import(new URL(file, root).href)
  } catch (error) {
    test(`${file} loads`, () => {
      throw error
    })
  }
}
