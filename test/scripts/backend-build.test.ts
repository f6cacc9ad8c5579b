import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
import {
  archiveCommit,
  checkArchive,
  chooseSource,
  moduleFailureAdvice,
  SIBLING_ARCHIVE,
  SOURCE_ENV,
} from '../../scripts/backend-build.ts'
import { SUPABASE_AUTH_COMMIT } from '../../e2e/support/supabase-auth-binary.ts'

const execFileAsync = promisify(execFile)

describe('backend:build source choice', () => {
  it('takes AUTHGATE_SUPABASE_AUTH_SRC first, resolved against the working directory', () => {
    assert.deepEqual(chooseSource({ [SOURCE_ENV]: 'archives/auth.tar.gz' }, true), {
      kind: 'archive',
      path: resolve('archives/auth.tar.gz'),
      from: SOURCE_ENV,
    })
  })

  it('falls back to the archive beside the clone, then to the Go module', () => {
    const sibling = chooseSource({ [SOURCE_ENV]: '' }, true)
    assert.equal(sibling.kind, 'archive')
    assert.equal(sibling.kind === 'archive' && sibling.path, SIBLING_ARCHIVE)
    assert.deepEqual(chooseSource({}, false), { kind: 'module' })
  })
})

describe('backend:build archive check', () => {
  let dir: string

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'authgate-archive-'))
  })
  after(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('reads the commit git archive records, and refuses an archive of another commit', async () => {
    // This repository's own HEAD stands in for an archive of another commit.
    const { stdout } = await execFileAsync('git', ['rev-parse', 'HEAD'])
    const head = stdout.trim()
    const archive = join(dir, 'other.tar.gz')
    await execFileAsync('git', [
      'archive',
      '--format=tar.gz',
      '--prefix=authgate/',
      '-o',
      archive,
      'HEAD',
      'package.json',
    ])
    assert.equal(await archiveCommit(archive), head)
    await assert.rejects(checkArchive(archive), new RegExp(`holds commit ${head}, not ${SUPABASE_AUTH_COMMIT}`))
  })

  it('accepts an archive that records no commit', async () => {
    const archive = join(dir, 'plain.tar.gz')
    await execFileAsync('tar', ['czf', archive, '-C', process.cwd(), 'package.json'])
    assert.equal(await archiveCommit(archive), undefined)
    assert.equal(await checkArchive(archive), undefined)
  })

  it('refuses a missing file and one that is not gzip', async () => {
    await assert.rejects(checkArchive(join(dir, 'absent.tar.gz')), /does not exist \(AUTHGATE_SUPABASE_AUTH_SRC/)
    const notGzip = join(dir, 'not-gzip.tar.gz')
    await writeFile(notGzip, 'plain text, not an archive')
    await assert.rejects(checkArchive(notGzip), /is not a gzip-compressed tar archive/)
    const shortGzip = join(dir, 'short.tar.gz')
    await writeFile(shortGzip, gzipSync(Buffer.from('short')))
    assert.equal(await checkArchive(shortGzip), undefined)
  })
})

describe('backend:build module failure', () => {
  const refused =
    'github.com/supabase/auth@bc32168e13fd: invalid version: reading https://proxy.golang.org/github.com/supabase/auth/@v/bc32168e13fd.info: 403 Forbidden'

  it('names the refusing proxy and both ways out', () => {
    const advice = moduleFailureAdvice(refused, { GOPROXY: 'https://goproxy.example' })
    assert.match(advice, /403 Forbidden/)
    assert.match(advice, /Your Go module proxy \(https:\/\/goproxy\.example\) does not serve that commit/)
    assert.match(advice, new RegExp(`archive/${SUPABASE_AUTH_COMMIT}\\.tar\\.gz`))
    assert.match(advice, /AUTHGATE_SUPABASE_AUTH_SRC=\S+ npm run backend:build/)
    assert.match(advice, /GOPRIVATE=github\.com\/supabase\/auth npm run backend:build/)
  })

  it('does not blame the proxy for a network failure', () => {
    const advice = moduleFailureAdvice('dial tcp: lookup proxy.golang.org: no such host', {})
    assert.doesNotMatch(advice, /does not serve/)
    assert.match(advice, /Check your network/)
  })
})
