import assert from 'node:assert/strict'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { homedir } from 'node:os'
import { ABSENCE, BINARY_ENV, buildDir, findGo, findSupabaseAuthBinary } from '../../../scripts/supabase-auth/binary.ts'

async function executable(path: string): Promise<string> {
  await writeFile(path, '#!/bin/sh\n')
  await chmod(path, 0o755)
  return path
}

describe('Supabase Auth binary lookup', () => {
  let dir: string
  let configured: string
  let built: string
  let pathDir: string
  let goDir: string
  const noBuild = (): string => join(dir, 'never-built')
  const withGo = async (): Promise<string> => join(goDir, 'go')
  const withoutGo = async (): Promise<undefined> => undefined

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'authgate-binary-'))
    configured = await executable(join(dir, 'configured'))
    built = await executable(join(dir, 'built'))
    pathDir = join(dir, 'path')
    goDir = join(dir, 'go-bin')
    await mkdir(pathDir)
    await mkdir(goDir)
    await executable(join(pathDir, 'gotrue'))
    await executable(join(goDir, 'go'))
    await writeFile(join(dir, 'not-executable'), '')
  })
  after(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('uses AUTHGATE_SUPABASE_AUTH_BIN before anything else', async () => {
    const found = await findSupabaseAuthBinary({ [BINARY_ENV]: configured, PATH: pathDir }, { builtBinary: built })
    assert.deepEqual(found, { path: configured })
  })

  it('does not fall back when AUTHGATE_SUPABASE_AUTH_BIN names no executable', async () => {
    const bad = join(dir, 'not-executable')
    const found = await findSupabaseAuthBinary({ [BINARY_ENV]: bad, PATH: pathDir }, { builtBinary: built })
    assert.ok('reason' in found)
    assert.match(found.reason, new RegExp(`${BINARY_ENV}=${bad} is not an executable file`))
  })

  it('runs none when AUTHGATE_SUPABASE_AUTH_BIN=none, whatever is installed', async () => {
    const found = await findSupabaseAuthBinary({ [BINARY_ENV]: 'none', PATH: pathDir }, { builtBinary: built })
    assert.deepEqual(found, { reason: `${ABSENCE}: ${BINARY_ENV}=none` })
  })

  it("keeps the build in the user's cache, shared by every clone", () => {
    assert.equal(buildDir({ XDG_CACHE_HOME: '/var/cache/u' }), '/var/cache/u/authgate/supabase-auth-bc32168e13fd')
    assert.equal(buildDir({}), join(homedir(), '.cache', 'authgate', 'supabase-auth-bc32168e13fd'))
  })

  it('finds what npm run backend:build built before anything on PATH', async () => {
    assert.deepEqual(await findSupabaseAuthBinary({ PATH: pathDir }, { builtBinary: built }), { path: built })
  })

  it('finds gotrue or supabase-auth on PATH when nothing was built', async () => {
    const found = await findSupabaseAuthBinary({ PATH: `${dir}/absent:${pathDir}` }, { builtBinary: noBuild() })
    assert.deepEqual(found, { path: join(pathDir, 'gotrue') })
  })

  it('says to run npm run backend:build when Go is there', async () => {
    const found = await findSupabaseAuthBinary({ PATH: dir }, { builtBinary: noBuild(), findGo: withGo })
    assert.ok('reason' in found)
    assert.match(found.reason, /^needs Supabase Auth: no server binary/)
    assert.match(found.reason, /run npm run backend:build$/)
    assert.doesNotMatch(found.reason, /Go is not installed/)
  })

  it('says to install Go first when it is missing too', async () => {
    const found = await findSupabaseAuthBinary({ PATH: dir }, { builtBinary: noBuild(), findGo: withoutGo })
    assert.ok('reason' in found)
    assert.match(found.reason, /Go is not installed either: install Go >= 1\.\d+\.\d+ .*then run npm run backend:build/)
  })

  it('finds go on PATH', async () => {
    assert.equal(await findGo({ PATH: `${pathDir}:${goDir}` }), join(goDir, 'go'))
  })
})
