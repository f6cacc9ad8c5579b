import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { startFakeBackend, type FakeBackend } from './support/fake-backend.ts'

const ROOT = new URL('../', import.meta.url)

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * The README's start command, `npm start`, on a port the kernel picks (PORT=0), with the environment
 * given; resolves once authgate listens, with the address its "ready" line names.
 */
async function npmStart(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; pid: number; url: string; logs: () => string }> {
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout!.on('data', (c: Buffer) => (out += c))
  child.stderr!.on('data', (c: Buffer) => (out += c))
  const ready = await new Promise<{ pid: number; address: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 30 s:\n${out}`)), 30_000)
    child.stdout!.on('data', () => {
      const line = out.split('\n').find((l) => l.includes('"msg":"authgate ready"'))
      if (line) {
        clearTimeout(timer)
        resolve(JSON.parse(line) as { pid: number; address: string })
      }
    })
    child.on('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)))
  })
  return { child, pid: ready.pid, url: ready.address, logs: () => out }
}

test('SIGTERM to `npm start` with 50 requests in flight: none is lost, the service exits, no orphan', async () => {
  const backend: FakeBackend = await startFakeBackend((_req, res) => {
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 1500)
  })
  const { child, pid, url, logs } = await npmStart({ PORT: '0', AUTHGATE_BACKEND_URL: backend.url })
  const agent = new Agent({ connections: 100 })
  try {
    assert.notEqual(pid, child.pid, 'authgate logs its own pid (npm is its parent)')
    const inFlight = Array.from({ length: 50 }, (_, i) =>
      request(`${url}/auth/settings?i=${i}`, { dispatcher: agent }).then(async (r) => ({
        status: r.statusCode,
        body: await r.body.text(),
      })),
    )
    while (backend.requests.length < 50) await sleep(20)
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    child.kill('SIGTERM')
    await sleep(200)
    // The listener is closed at once: a new connection is refused.
    await assert.rejects(request(`${url}/livez`, { dispatcher: new Agent() }))
    const results = await Promise.all(inFlight)
    assert.deepEqual(
      results.map((r) => r.status),
      Array(50).fill(200),
    )
    assert.ok(results.every((r) => r.body === '{"ok":true}'))
    assert.equal(await exited, 0, logs())
    await sleep(100)
    assert.equal(alive(pid), false, 'the node process is gone too')
    assert.match(logs(), /"msg":"shut down"/)
  } finally {
    await agent.close()
    if (alive(pid)) process.kill(pid, 'SIGKILL')
    await backend.close()
  }
})

test('a second signal after a pause exits at once; one right behind the first is a copy of it', async () => {
  const backend = await startFakeBackend((_req, res) => {
    // Never needed: the request is cut. Unreferenced, so the file's process need not wait for it.
    setTimeout(() => res.writeHead(200).end('{}'), 20_000).unref()
  })
  const { child, pid, url, logs } = await npmStart({ PORT: '0', AUTHGATE_BACKEND_URL: backend.url })
  const agent = new Agent()
  try {
    const pending = request(`${url}/auth/settings`, { dispatcher: agent }).catch(() => undefined)
    while (backend.requests.length < 1) await sleep(20)
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    process.kill(pid, 'SIGTERM')
    await sleep(100)
    process.kill(pid, 'SIGINT')
    await sleep(1500)
    assert.equal(alive(pid), true, 'still finishing the request in flight')
    assert.match(logs(), /signal repeated/)
    const t = performance.now()
    process.kill(pid, 'SIGTERM')
    assert.equal(await exited, 1)
    assert.ok(performance.now() - t < 3000)
    assert.match(logs(), /second signal: exiting now/)
    await pending
  } finally {
    await agent.close()
    if (alive(pid)) process.kill(pid, 'SIGKILL')
    await backend.close()
  }
})
