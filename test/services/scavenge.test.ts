import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createConnection, createServer, type AddressInfo } from 'node:net'
import { test } from 'node:test'
import { runInNewContext } from 'node:vm'
import { QUIET_MS, relayed, SCAVENGE_EVERY_BYTES } from '../../src/services/scavenge.ts'

const MiB = 2 ** 20

/** `bytes` through a loopback socket, each chunk read and dropped as a relay leaves it. */
async function readThroughSocket(bytes: number): Promise<void> {
  const server = createServer((socket) => {
    const chunk = Buffer.alloc(64 * 1024)
    let sent = 0
    const pump = () => {
      while (sent < bytes) {
        sent += chunk.length
        if (!socket.write(chunk)) return void socket.once('drain', pump)
      }
      socket.end()
    }
    pump()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const client = createConnection((server.address() as AddressInfo).port, '127.0.0.1')
  let got = 0
  client.on('data', (c: Buffer) => (got += c.length))
  await once(client, 'end')
  client.destroy()
  server.close()
  assert.equal(got, bytes)
}

const turns = (n: number) =>
  new Promise<void>((resolve) => (n <= 0 ? resolve() : setImmediate(() => void turns(n - 1).then(resolve))))

test(`every ${SCAVENGE_EVERY_BYTES / MiB} MiB relayed, the dead read buffers are freed`, async () => {
  relayed(SCAVENGE_EVERY_BYTES) // the collector is taken on first use
  await turns(5)
  const before = process.memoryUsage().arrayBuffers
  await readThroughSocket(8 * MiB)
  const held = process.memoryUsage().arrayBuffers
  assert.ok(held - before >= 4 * MiB, `the buffers stay until collected (${held - before} bytes)`)
  relayed(SCAVENGE_EVERY_BYTES - 1)
  relayed(1)
  // V8's sweeper frees the buffers' memory on a thread of its own after the collection: on a loaded
  // machine that thread may wait for a core, so the test waits up to 5 s (it takes milliseconds when
  // the machine is quiet). Without the collection nothing would free them in that time: the first
  // assertion saw them held.
  let now = held
  const until = Date.now() + 5_000
  while (now - before >= 2 * MiB && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    now = process.memoryUsage().arrayBuffers
  }
  assert.ok(now - before < 2 * MiB, `freed: ${now - before} bytes left`)
})

/** Waits up to 5 s for the array buffers to fall under `bound` bytes above `before` (see the sweeper above). */
async function freedTo(before: number, bound: number): Promise<number> {
  let now = process.memoryUsage().arrayBuffers
  const until = Date.now() + 5_000
  while (now - before >= bound && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    now = process.memoryUsage().arrayBuffers
  }
  return now - before
}

test('when relaying stops, what it left since the last collection is freed after a quiet second', async () => {
  relayed(SCAVENGE_EVERY_BYTES)
  await turns(5)
  const before = process.memoryUsage().arrayBuffers
  // less than the step, so that only the quiet timer collects it
  await readThroughSocket(SCAVENGE_EVERY_BYTES - MiB)
  relayed(SCAVENGE_EVERY_BYTES - MiB)
  const held = process.memoryUsage().arrayBuffers
  assert.ok(held - before >= 2 * MiB, `the buffers stay until collected (${held - before} bytes)`)
  // Still relaying: a chunk within each quiet second keeps the collection off.
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS / 2))
    relayed(1)
  }
  assert.ok(process.memoryUsage().arrayBuffers - before >= 2 * MiB, 'not collected while bytes move')
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS * 2))
  const left = await freedTo(before, MiB)
  assert.ok(left < MiB, `freed: ${left} bytes left`)
})

test('the collector is not exposed to the host: no gc in this context or a new one', () => {
  relayed(SCAVENGE_EVERY_BYTES)
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined')
  assert.equal(runInNewContext('typeof gc'), 'undefined')
})
