import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { chooseSource, SOURCE_ENV, UPSTREAM_ARCHIVE, usableGo } from '../../scripts/backend-build.ts'
import { findGo, SUPABASE_AUTH_COMMIT } from '../../scripts/supabase-auth/binary.ts'
import {
  atLeast,
  buildFromArchive,
  goVersion,
  SourceUnavailableError,
  treeDigest,
} from '../../scripts/supabase-auth/build.ts'

const execFileAsync = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const go = await findGo()
const noGo = go === undefined ? 'needs Go (apt-get install golang, or https://go.dev/dl/)' : false

describe('backend:build source choice', () => {
  it("downloads the upstream's archive of the pinned commit unless told otherwise", () => {
    assert.equal(chooseSource({}), UPSTREAM_ARCHIVE)
    assert.equal(chooseSource({ [SOURCE_ENV]: '' }), UPSTREAM_ARCHIVE)
    assert.equal(UPSTREAM_ARCHIVE, `https://github.com/supabase/auth/archive/${SUPABASE_AUTH_COMMIT}.tar.gz`)
  })

  it('takes AUTHGATE_SUPABASE_AUTH_SRC as a URL, or a file resolved against the working directory', () => {
    assert.equal(
      chooseSource({ [SOURCE_ENV]: 'https://mirror.example/auth.tar.gz' }),
      'https://mirror.example/auth.tar.gz',
    )
    assert.equal(chooseSource({ [SOURCE_ENV]: 'archives/auth.tar.gz' }), resolve('archives/auth.tar.gz'))
  })
})

describe('Go version check', () => {
  it('reads go version output and compares versions', () => {
    assert.deepEqual(goVersion('go version go1.26.8 linux/amd64'), [1, 26, 8])
    assert.deepEqual(goVersion('go version go1.27 linux/amd64'), [1, 27, 0])
    assert.equal(goVersion('not go'), undefined)
    assert.equal(atLeast([1, 26, 8], '1.26.6'), true)
    assert.equal(atLeast([1, 26, 6], '1.26.6'), true)
    assert.equal(atLeast([1, 26, 5], '1.26.6'), false)
    assert.equal(atLeast([1, 25, 9], '1.26.6'), false)
    assert.equal(atLeast([2, 0, 0], '1.26.6'), true)
  })

  it('with no Go, names every way out with its exact variable', async () => {
    const error = await usableGo({ PATH: '' }, { findGo: async () => undefined }).then(
      () => assert.fail('resolved without Go'),
      (e: Error) => e.message,
    )
    assert.match(error, /^Go is not installed/)
    assert.match(error, /install Go >= \d+\.\d+\.\d+ \(https:\/\/go\.dev\/dl\/;/)
    assert.match(error, /AUTHGATE_SUPABASE_AUTH_BIN=\/path\/to\/supabase-auth: a server built elsewhere/)
    assert.match(error, /AUTHGATE_BACKEND_URL=http:\/\/localhost:9999 npm run dev: a Supabase Auth you already run/)
    assert.match(error, /`supabase start`/)
  })
})

describe('offline: the archive cannot be downloaded', () => {
  it('npm run backend:build stops naming every way out with its exact variable', async () => {
    const cache = await mkdtemp(join(tmpdir(), 'authgate-offline-'))
    try {
      // .invalid never resolves (RFC 2606): what a machine without DNS or network sees for github.com.
      const result = await execFileAsync(process.execPath, [join(ROOT, 'scripts', 'backend-build.ts')], {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: cache,
          XDG_CACHE_HOME: cache,
          [SOURCE_ENV]: 'https://archive.authgate-test.invalid/auth.tar.gz',
        },
      }).then(
        () => assert.fail('the build succeeded offline'),
        (e: { code: number; stderr: string }) => e,
      )
      assert.equal(result.code, 1)
      const said = result.stderr
      if (go !== undefined) {
        assert.match(said, /could not download https:\/\/archive\.authgate-test\.invalid\/auth\.tar\.gz: getaddrinfo/)
        assert.match(
          said,
          /AUTHGATE_SUPABASE_AUTH_SRC=\/path\/to\/auth\.tar\.gz: a copy of https:\/\/github\.com\/supabase\/auth\/archive\//,
        )
      }
      assert.match(said, /AUTHGATE_SUPABASE_AUTH_BIN=\/path\/to\/supabase-auth/)
      assert.match(said, /AUTHGATE_BACKEND_URL=http:\/\/localhost:9999 npm run dev/)
      assert.match(said, /`supabase start`/)
    } finally {
      await rm(cache, { recursive: true, force: true })
    }
  })
})

// The download, check and build path of npm run backend:build, run for real on a small Go program
// of this test's own, packed the way GitHub packs an archive (one top-level folder) and served
// from a local HTTP server.

describe('building from a source archive', { skip: noGo }, () => {
  let dir: string
  let server: Server
  let base: string
  let digest: string
  const served = new Map<string, Buffer>()

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'authgate-build-'))
    const src = join(dir, 'tiny-0123abc')
    await mkdir(join(src, 'cmd'), { recursive: true })
    await writeFile(join(src, 'go.mod'), 'module example.com/tiny\n\ngo 1.19\n')
    await writeFile(
      join(src, 'main.go'),
      'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nvar Version = "unset"\n\n' +
        'func main() {\n\tif len(os.Args) > 1 && os.Args[1] == "version" {\n\t\tfmt.Println(Version)\n\t}\n}\n',
    )
    await writeFile(join(src, 'cmd', 'README'), 'a nested file\n')
    digest = await treeDigest(src)
    await execFileAsync('tar', ['czf', join(dir, 'good.tar.gz'), '-C', dir, 'tiny-0123abc'])
    served.set('/good.tar.gz', await readFile(join(dir, 'good.tar.gz')))
    await writeFile(join(src, 'cmd', 'README'), 'a nested file, changed\n')
    await execFileAsync('tar', ['czf', join(dir, 'tampered.tar.gz'), '-C', dir, 'tiny-0123abc'])
    served.set('/tampered.tar.gz', await readFile(join(dir, 'tampered.tar.gz')))
    served.set('/not-an-archive.tar.gz', Buffer.from('<html>not found</html>'))

    server = createServer((req, res) => {
      // GitHub answers an archive with a redirect to its download host: so does this server.
      if (req.url === '/archive/good.tar.gz') return void res.writeHead(302, { location: '/good.tar.gz' }).end()
      const body = served.get(req.url ?? '')
      if (body === undefined) return void res.writeHead(404).end('not found')
      res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': body.length }).end(body)
    })
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(async () => {
    server?.close()
    await rm(dir, { recursive: true, force: true })
  })

  const options = (source: string, out: string) => ({
    source,
    digest,
    dir: out,
    binaryName: 'tiny',
    go: go!,
    buildFlags: ['-ldflags', '-X main.Version=v9.9.9-test'],
  })

  it('downloads, verifies and builds, keeping the verified source beside the binary', async () => {
    const out = join(dir, 'out-good')
    const lines: string[] = []
    const binary = await buildFromArchive({ ...options(`${base}/archive/good.tar.gz`, out), log: (l) => lines.push(l) })
    assert.equal(binary, join(out, 'tiny'))
    const { stdout } = await execFileAsync(binary, ['version'])
    assert.equal(stdout.trim(), 'v9.9.9-test')
    assert.equal(await treeDigest(join(out, 'src')), digest)
    assert.ok(
      lines.some((l) => l.startsWith('downloaded ')),
      lines.join('\n'),
    )
    assert.ok(
      lines.some((l) => l.startsWith('source verified')),
      lines.join('\n'),
    )
    assert.deepEqual((await readFile(join(out, '.source'), 'utf8')).split('\n').slice(0, 2), [
      `${base}/archive/good.tar.gz`,
      digest,
    ])
  })

  it('builds from a file as from a URL, saying it unpacks that file, then each phase of the build', async () => {
    const out = join(dir, 'out-file')
    const lines: string[] = []
    await buildFromArchive({ ...options(join(dir, 'good.tar.gz'), out), log: (l) => lines.push(l) })
    assert.ok((await stat(join(out, 'tiny'))).isFile())
    const said = lines.join('\n')
    assert.ok(!lines.some((l) => l.startsWith('download')), said)
    assert.ok(lines.includes(`unpacking ${join(dir, 'good.tar.gz')}`), said)
    assert.match(said, /^fetching the Go modules it needs/m)
    // fmt and os, and the standard library packages they import.
    assert.match(said, /^compiling (\d+) packages with .*go \(\d+ s so far\)$/m)
    assert.ok(Number(/^compiling (\d+) packages/m.exec(said)![1]) > 10, said)
    assert.match(said, /^built in \d+ s \(\d+ of \d+ packages compiled, the rest from Go's build cache\)$/m)
  })

  it('refuses an archive whose files differ from the pinned digest, and keeps the earlier build', async () => {
    const out = join(dir, 'out-kept')
    const first = await buildFromArchive(options(`${base}/good.tar.gz`, out))
    const before = await readFile(first)
    await assert.rejects(
      buildFromArchive(options(`${base}/tampered.tar.gz`, out)),
      new RegExp(`does not hold the pinned source: its files' digest is sha256:[0-9a-f]{64}, expected ${digest}`),
    )
    assert.deepEqual(await readFile(first), before)
    assert.equal(await treeDigest(join(out, 'src')), digest)
  })

  it('says what went wrong with a missing archive or one that is not an archive', async () => {
    await assert.rejects(buildFromArchive(options(`${base}/absent.tar.gz`, join(dir, 'x'))), /HTTP 404/)
    await assert.rejects(
      buildFromArchive(options(`${base}/not-an-archive.tar.gz`, join(dir, 'y'))),
      /is not a gzip-compressed tar archive/,
    )
    await assert.rejects(
      buildFromArchive(options('http://127.0.0.1:1/none.tar.gz', join(dir, 'z'))),
      (error: Error) => error instanceof SourceUnavailableError && /could not download/.test(error.message),
    )
  })
})
