import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

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
  const child = spawn(process.execPath, ['--import', probe, entry], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', AUTHGATE_BACKEND_URL: 'http://127.0.0.1:9' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise<number | null>((r) => child.on('exit', r))
  let log = ''
  child.stdout.on('data', (c) => (log += c))
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => log.includes('"msg":"authgate ready"') && resolve())
    void exited.then((code) => reject(new Error(`exited ${code} before it was ready:\n${log}`)))
  })
  child.kill('SIGTERM')
  assert.equal(await exited, 0)
  return Number(readFileSync(out, 'utf8'))
}

test('the service entry sets how the heap grows before the rest of the service is read', async () => {
  // Set after the modules had been read (the entry importing everything statically), the setting
  // found a young generation of 8 MB already; set first, it stays at V8's initial size.
  const young = await youngGenerationAtStartMb('src/main.ts')
  assert.ok(young <= 4, `the young generation grew to ${young} MB during start-up`)
})
