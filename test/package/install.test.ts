import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { plainEnvironment } from '../support/plain-environment.ts'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/**
 * SLOW (about 30 to 60 s, minutes on a loaded machine: a compile, a pack, an install and a type check). The package as a user gets it: packed
 * the way `npm install github:<org>/authgate` and `npm publish` pack it (npm runs `prepare`, which
 * compiles dist/), installed into an empty project, imported by name and started. The pack is made
 * from a copy of the files the package ships, so the repository's own dist/ is left alone.
 */
test(
  'SLOW: the packed package installs into an empty project, imports as `authgate` and starts',
  { timeout: 600_000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'authgate-install-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; files: string[] }

    // The package's sources and its build: what `files` names and what `prepare` compiles from.
    const source = join(dir, 'source')
    for (const path of [
      ...pkg.files,
      'src',
      'scripts/prepare.ts',
      'scripts/engine-warnings.ts',
      'package.json',
      'tsconfig.json',
      'tsconfig.build.json',
    ])
      cpSync(join(ROOT, path), join(source, path), {
        recursive: true,
        filter: (from) => !from.startsWith(join(ROOT, 'dist')),
      })
    symlinkSync(join(ROOT, 'node_modules'), join(source, 'node_modules'))
    // npm, the compiler and the application run as on a user's machine: the coverage they would
    // record (npm resolving, tsc compiling, the packed dist/) is none of src/.
    const plain = plainEnvironment()
    const npm = {
      env: { ...plain, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' },
    }
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], {
      cwd: source,
      ...npm,
      maxBuffer: 1 << 24,
    })
    const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: Array<{ path: string }> }]
    const shipped = files.map((f) => f.path)
    for (const path of ['dist/index.js', 'dist/index.d.ts', 'dist/main.js', 'bin/authgate.js', 'README.md'])
      assert.ok(shipped.includes(path), `${path} is in the package`)
    assert.ok(!shipped.some((p) => p.startsWith('src/') || p.startsWith('test/')), 'no sources or tests shipped')

    // An empty project installs it from the tarball (dependencies from npm's cache where it has them).
    const app = join(dir, 'app')
    cpSync(join(dir, filename), join(app, filename))
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'an-app', private: true, type: 'module' }))
    // The README's install line, as written but for where the tarball is. Tarballs come from npm's
    // cache; naming a package (fastify) needs its registry listing, which --offline cannot resolve.
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const block = /<!-- install:start[^>]*-->\s*```sh\n([\s\S]*?)```\s*<!-- install:end -->/.exec(readme)
    assert.ok(block, 'README.md: the install markers are missing')
    const line = /^npm install (\S+\.tgz)((?: [a-z@][\w@./^-]*)+)$/m.exec(block[1]!)
    assert.ok(line, block[1])
    assert.equal(line[1]!.split('/').pop(), filename, 'the README names the tarball npm pack makes')
    const peers = line[2]!.trim().split(' ')
    await run('npm', ['install', '--prefer-offline', '--no-package-lock', `./${filename}`, ...peers], {
      cwd: app,
      ...npm,
    })
    // The application's own dependencies: what it imports resolves without npm's hoisting.
    const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { dependencies: object }
    assert.deepEqual(Object.keys(manifest.dependencies).sort(), ['authgate', ...peers].sort())
    // What `files` names (npm adds a LICENSE of its own accord), and no sources or tests.
    const installed = readdirSync(join(app, 'node_modules', 'authgate'))
    for (const entry of ['README.md', 'bin', 'dist', 'package.json']) assert.ok(installed.includes(entry), entry)
    assert.deepEqual(
      installed.filter((e) => !pkg.files.includes(e) && e !== 'package.json' && !/^licen[cs]e/i.test(e)),
      [],
    )

    // The README's library use: `import { authgate } from 'authgate'` on the application's Fastify,
    // forwarding to Supabase Auth (a stand-in that answers every request).
    const backend = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"access_token":"t","token_type":"bearer"}')
    })
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve))
    t.after(() => backend.close())
    const backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`
    writeFileSync(
      join(app, 'server.js'),
      `import Fastify from 'fastify'
     import { authgate, buildApp, defineRoute } from 'authgate'
     const app = Fastify()
     await app.register(authgate, { config: { backendUrl: new URL(process.argv[2]), prefix: '/auth' }, rateLimit: false })
     app.get('/hello', async () => ({ hello: 'world' }))
     const token = await app.inject({ method: 'POST', url: '/auth/token?grant_type=password', payload: { email: 'a@example.com', password: 'secret123' } })
     const missing = await app.inject({ url: '/auth/admin/users' })
     const hello = await app.inject({ url: '/hello' })
     await app.close()
     const service = await buildApp({ config: { backendUrl: new URL(process.argv[2]) }, rateLimit: false })
     service.route(defineRoute({ method: 'GET', url: '/me', auth: 'required', handler: async (req) => req.user }))
     await service.ready()
     await service.close()
     console.log(JSON.stringify({ token: [token.statusCode, token.json()], missing: missing.json().error_code, hello: hello.json(), defineRoute: typeof defineRoute }))`,
    )
    const started = await run(process.execPath, ['server.js', backendUrl], { cwd: app, env: plain })
    assert.deepEqual(JSON.parse(started.stdout), {
      token: [200, { access_token: 't', token_type: 'bearer' }],
      missing: 'not_found',
      hello: { hello: 'world' },
      defineRoute: 'function',
    })

    // Its types: a TypeScript application compiles against the shipped declarations, and so do the
    // examples, whose every import (authgate, fastify, typebox) resolves from this install.
    writeFileSync(
      join(app, 'check.ts'),
      `import { authgate, type AuthgateOptions } from 'authgate'\nconst options: AuthgateOptions = { rateLimit: false }\nexport { authgate, options }\n`,
    )
    cpSync(join(ROOT, 'examples'), join(app, 'examples'), { recursive: true })
    const examples = readdirSync(join(app, 'examples'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join('examples', f))
    assert.ok(examples.length >= 2, examples.join(' '))
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
    await run(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--module',
        'nodenext',
        '--types',
        'node',
        '--typeRoots',
        join(ROOT, 'node_modules', '@types'),
        // The examples import each other as `./todo-routes.ts`, as Node.js runs them.
        '--allowImportingTsExtensions',
        '--target',
        'es2024',
        'check.ts',
        ...examples,
      ],
      { cwd: app, env: plain },
    )

    // And the command: `npx authgate --version` runs the compiled service.
    const version = await run(join(app, 'node_modules', '.bin', 'authgate'), ['--version'], { cwd: app, env: plain })
    assert.equal(version.stdout, `${pkg.version}\n`)
  },
)
