import assert from 'node:assert/strict'
import { test } from 'node:test'
import { engineWarningNote } from '../../scripts/engine-warnings.ts'

test('npm ci on an older Node.js ends with one line saying what its EBADENGINE warnings mean; on a supported one, nothing', () => {
  const note = engineWarningNote('npm/11.19.1 node/v20.20.2 linux x64 workspaces/false', '24.21.0')
  assert.ok(note)
  assert.match(note, /^authgate: npm runs on Node\.js 20\.20\.2, older than the 22\.19 /)
  assert.match(
    note,
    /EBADENGINE warnings above\. The install is complete: .* run on the Node\.js 24\.21\.0 it installed/,
  )
  assert.match(
    note,
    /supabase-js example\) need Node\.js >= 22; npm ci --loglevel=error installs without the warnings\.\n$/,
  )
  assert.equal(engineWarningNote('npm/11.6.0 node/v24.21.0 linux x64 workspaces/false', '24.21.0'), undefined)
  assert.equal(engineWarningNote('npm/10.9.0 node/v22.19.0 darwin arm64', '22.19.0'), undefined)
  // Not run by npm, or by a client that does not say its Node.js: nothing to explain.
  assert.equal(engineWarningNote(undefined, '24.21.0'), undefined)
  assert.equal(engineWarningNote('yarn/4.5.0 npm/? node/?', '24.21.0'), undefined)
})
