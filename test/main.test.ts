import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

/**
 * Starts the service entry with these Node.js flags and backend, and waits for its ready line.
 * `stop` ends it with SIGTERM, checks it exited cleanly and gives everything it wrote to stdout.
 */
async function startEntry(
  nodeArgs: string[],
  backendUrl: string,
): Promise<{ address: string; stop: () => Promise<string> }> {
  const child = spawn(process.execPath, nodeArgs, {
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', AUTHGATE_BACKEND_URL: backendUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise<number | null>((r) => child.on('exit', r))
  let out = ''
  child.stdout.on('data', (c) => (out += c))
  const address = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const ready = out.split('\n').find((line) => line.includes('"msg":"authgate ready"'))
      const url = ready && /"address":"([^"]+)"/.exec(ready)?.[1]
      if (url) resolve(url)
    })
    void exited.then((code) => reject(new Error(`exited ${code} before it was ready:\n${out}`)))
  })
  return {
    address,
    async stop() {
      child.kill('SIGTERM')
      assert.equal(await exited, 0)
      return out
    },
  }
}

/**
 * The young generation's largest physical size while the service at `entry` starts and until it
 * stops, no client having connected: read by a module preloaded with `--import`, which only watches.
 */
async function youngGenerationAtStartMb(entry: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'authgate-main-'))
  const out = join(dir, 'young.txt')
  const probe = join(dir, 'probe.mjs')
  writeFileSync(
    probe,
    `import { getHeapSpaceStatistics } from 'node:v8'
     import { writeFileSync } from 'node:fs'
     let most = 0
     const look = () => { most = Math.max(most, getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').physical_space_size) }
     setInterval(look, 5).unref()
     process.on('exit', () => { look(); writeFileSync(${JSON.stringify(out)}, String(most / 2 ** 20)) })`,
  )
  const service = await startEntry(['--import', probe, entry], 'http://127.0.0.1:9')
  await service.stop()
  return Number(readFileSync(out, 'utf8'))
}

test('the service entry sets how the heap grows before the rest of the service is read', async () => {
  // Set after the modules had been read (the entry importing everything statically), the setting
  // found a young generation of 8 MB already; set first, it stays at V8's initial size.
  const young = await youngGenerationAtStartMb('src/main.ts')
  assert.ok(young <= 4, `the young generation grew to ${young} MB during start-up`)
})

test("undici's WebAssembly parser is not recompiled by the optimizing compiler for the first responses", async (t) => {
  // By default V8 recompiles the parser after three to five responses, and the C allocator keeps
  // about 9 MB of that compile for the life of the process: a process that only started (its
  // start-up checks talk to Supabase Auth) and answered a few requests held it too.
  const backend = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json')
    res.end('{"external":{"email":true},"disable_signup":false,"mailer_autoconfirm":false}')
  })
  backend.listen(0, '127.0.0.1')
  await once(backend, 'listening')
  t.after(() => backend.close())
  const service = await startEntry(
    ['--trace-wasm-compilation-times', 'src/main.ts'],
    `http://127.0.0.1:${(backend.address() as AddressInfo).port}`,
  )
  for (let i = 0; i < 30; i++) {
    const res = await fetch(`${service.address}/auth/settings`)
    assert.equal(res.status, 200)
    await res.arrayBuffer()
  }
  const out = await service.stop()
  // Each trace line names the function as <module>#<index>. The first module is Node.js's type
  // stripper (also WebAssembly, compiled before the entry runs, so with V8's default budget); the
  // other is undici's parser: its functions compiled by the baseline compiler (so it ran), none by
  // the optimizing one.
  const compiles = [...out.matchAll(/Compiled function (0x[0-9a-f]+)#\d+ using (\w+)/g)]
  const stripper = compiles[0]?.[1]
  const parser = compiles.filter(([, module]) => module !== stripper).map(([, , tier]) => tier)
  assert.ok(parser.includes('Liftoff'), `the parser was not compiled:\n${out}`)
  assert.deepEqual(
    parser.filter((tier) => tier !== 'Liftoff'),
    [],
  )
})
