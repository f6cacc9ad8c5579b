import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
// @ts-expect-error plain JavaScript on purpose (it must run on old Node.js versions), no declarations
import { MINIMUM, supported } from '../bin/node-version.js'

const ROOT = new URL('../', import.meta.url)
const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as {
  engines: { node: string }
  bin: Record<string, string>
  scripts: Record<string, string>
}

test('the launcher accepts exactly the versions `engines` names', () => {
  assert.deepEqual(MINIMUM, [22, 19])
  assert.equal(pkg.engines.node, `>=${MINIMUM.join('.')}`)
  for (const v of ['22.19.0', '22.20.1', '23.0.0', '24.21.0', 'v25.1.0']) assert.equal(supported(v), true, v)
  for (const v of ['20.20.2', '22.18.0', '18.0.0', 'v21.7.3']) assert.equal(supported(v), false, v)
  // undici, the dependency with the highest floor, agrees.
  const undici = JSON.parse(readFileSync(new URL('node_modules/undici/package.json', ROOT), 'utf8')) as {
    engines: { node: string }
  }
  assert.equal(undici.engines.node, '>=22.19.0')
})

test('`authgate --help` through the bin entry, and `npm start` execs node (signals reach the service)', () => {
  assert.equal(pkg.bin.authgate, 'bin/authgate.js')
  assert.match(pkg.scripts.start!, /^exec node bin\/authgate\.js$/)
  const out = spawnSync(process.execPath, ['bin/authgate.js', '--help'], { cwd: ROOT, encoding: 'utf8' })
  assert.equal(out.status, 0)
  assert.match(out.stdout, /AUTHGATE_BACKEND_URL/)
})

/** Node.js binaries on this machine older than the minimum (the system one here is 20). */
function oldNodes(): string[] {
  let paths: string[]
  try {
    paths = execFileSync('which', ['-a', 'node'], { encoding: 'utf8' }).split('\n').filter(Boolean)
  } catch {
    return []
  }
  return paths.filter((p) => {
    const v = spawnSync(p, ['--version'], { encoding: 'utf8' }).stdout.trim()
    return v !== '' && !supported(v)
  })
}

test('started on an unsupported Node.js, authgate says what it needs instead of a stack trace', () => {
  for (const node of oldNodes()) {
    const out = spawnSync(node, ['bin/authgate.js'], { cwd: ROOT, encoding: 'utf8', timeout: 10_000 })
    assert.equal(out.status, 1, node)
    assert.match(out.stderr, /^authgate: Node\.js 22\.19 or newer is required; this is v\d+/)
    assert.doesNotMatch(out.stderr, /\n\s+at /, 'no stack trace')
  }
})

test('`--version` prints the version; an unknown argument fails with the usage instead of starting', () => {
  const version = spawnSync(process.execPath, ['bin/authgate.js', '--version'], { cwd: ROOT, encoding: 'utf8' })
  assert.equal(version.status, 0)
  assert.equal(version.stdout, `${(pkg as unknown as { version: string }).version}\n`)
  for (const [unknown, ...args] of [
    ['--hlep', '--hlep'],
    ['serve', 'serve'],
    ['--port', '--port', '80'],
    ['x', '--version', 'x'],
  ] as const) {
    // A service that starts anyway would not exit: the timeout turns that into a failure.
    const out = spawnSync(process.execPath, ['bin/authgate.js', ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? '' },
    })
    assert.equal(out.status, 2, `${args.join(' ')}: ${out.stderr}`)
    assert.ok(out.stderr.startsWith(`authgate: unknown argument "${unknown}"`), out.stderr)
    assert.match(out.stderr, /Usage: authgate/)
    assert.equal(out.stdout, '')
  }
})

test('the launcher runs the compiled service when it is current, else the sources', async () => {
  const { cp, mkdir, mkdtemp, rm, utimes, writeFile } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const dir = await mkdtemp(join(tmpdir(), 'authgate-launcher-'))
  try {
    await cp(new URL('bin/', ROOT), join(dir, 'bin'), { recursive: true })
    await mkdir(join(dir, 'src', 'deep'), { recursive: true })
    await mkdir(join(dir, 'dist'))
    await writeFile(join(dir, 'src', 'main.ts'), "process.stdout.write('sources')\n")
    await writeFile(join(dir, 'src', 'deep', 'leaf.ts'), '')
    await writeFile(join(dir, 'dist', 'main.js'), "process.stdout.write('compiled')\n")
    const run = () => spawnSync(process.execPath, [join(dir, 'bin', 'authgate.js')], { encoding: 'utf8' }).stdout
    const at = (path: string, seconds: number) => utimes(join(dir, path), seconds, seconds)

    await at('src/main.ts', 1_000)
    await at('src/deep/leaf.ts', 1_000)
    await at('dist/main.js', 2_000)
    assert.equal(run(), 'compiled', 'built after every source file')
    await at('src/deep/leaf.ts', 3_000)
    assert.equal(run(), 'sources', 'a source file changed after the build')
    await rm(join(dir, 'dist'), { recursive: true })
    assert.equal(run(), 'sources', 'never built')
    await mkdir(join(dir, 'dist'))
    await writeFile(join(dir, 'dist', 'main.js'), "process.stdout.write('compiled')\n")
    await rm(join(dir, 'src'), { recursive: true })
    assert.equal(run(), 'compiled', 'the npm package: no sources')
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
