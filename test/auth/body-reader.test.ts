import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { PassThrough } from 'node:stream'
import { describe, it } from 'node:test'
import { readBodyBytes } from '../../src/auth/body-reader.ts'
import { heldMemory } from '../support/held-memory.ts'

/**
 * A reader fed by hand: each `data` event delivered at once, as a socket's are, with nothing of a
 * stream's own buffering in the memory the tests read.
 */
function fedReader(contentLength: string | undefined, limit: number) {
  const stream = Object.assign(new EventEmitter(), { resume: () => stream })
  let settle!: (o: Outcome) => void
  const outcome = new Promise<Outcome>((resolve) => (settle = resolve))
  readBodyBytes(stream as unknown as NodeJS.ReadableStream, contentLength, limit, (err, body) => settle({ err, body }))
  return {
    stream: {
      write: (chunk: Buffer) => stream.emit('data', chunk),
      destroy: (err: Error) => stream.emit('error', err),
    },
    outcome,
  }
}

interface Outcome {
  err: (Error & { code?: string; statusCode?: number }) | null
  body: Buffer | undefined
}

/** A reader on a stream of its own: the stream, and the outcome once `done` is called. */
function reader(contentLength: string | undefined, limit: number) {
  const stream = new PassThrough()
  let settle!: (o: Outcome) => void
  const outcome = new Promise<Outcome>((resolve) => (settle = resolve))
  readBodyBytes(stream, contentLength, limit, (err, body) => settle({ err, body }))
  return { stream, outcome }
}

describe('readBodyBytes', () => {
  it('gives the bytes as they came, whole or in pieces, with a length or chunked', async () => {
    const body = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251))
    for (const declared of [String(body.length), undefined]) {
      for (const sizes of [[body.length], [1], [7, 3000], [4095, 1, 4096], [16 * 1024], [40_000]]) {
        const { stream, outcome } = reader(declared, 1024 * 1024)
        for (let at = 0, i = 0; at < body.length; i++) {
          const size = sizes[i % sizes.length]!
          stream.write(body.subarray(at, at + size))
          at += size
        }
        stream.end()
        const { err, body: got } = await outcome
        assert.equal(err, null)
        assert.ok(got!.equals(body), `declared ${declared}, pieces of ${sizes.join('/')}`)
      }
    }
  })

  it('an empty body is an empty buffer', async () => {
    for (const declared of ['0', undefined]) {
      const { stream, outcome } = reader(declared, 100)
      stream.end()
      const { err, body } = await outcome
      assert.equal(err, null)
      assert.equal(body!.length, 0)
    }
  })

  it("refuses as Fastify's reader does: a declared or a received length over the limit, a body shorter than declared, a stream error", async () => {
    const declared = reader('101', 100)
    assert.equal((await declared.outcome).err?.code, 'FST_ERR_CTP_BODY_TOO_LARGE')
    const chunked = reader(undefined, 100)
    chunked.stream.write(Buffer.alloc(60))
    chunked.stream.write(Buffer.alloc(41))
    assert.equal((await chunked.outcome).err?.code, 'FST_ERR_CTP_BODY_TOO_LARGE')
    const exact = reader(undefined, 100)
    exact.stream.end(Buffer.alloc(100))
    assert.equal((await exact.outcome).body!.length, 100)
    const short = reader('10', 100)
    short.stream.end(Buffer.alloc(9))
    assert.equal((await short.outcome).err?.code, 'FST_ERR_CTP_INVALID_CONTENT_LENGTH')
    const broken = reader('10', 100)
    broken.stream.destroy(new Error('aborted'))
    const { err } = await broken.outcome
    assert.equal(err?.message, 'aborted')
    assert.equal(err?.statusCode, 400)
  })

  it('holds no room ahead of what came: a byte on each of many bodies, half a body in large pieces', async () => {
    const open: ReturnType<typeof fedReader>[] = []
    let before = await heldMemory()
    for (let r = 0; r < 2000; r++) {
      const one = fedReader('1000000', 1024 * 1024)
      one.stream.write(Buffer.from([r & 0xff]))
      open.push(one)
    }
    await new Promise((resolve) => setImmediate(resolve))
    const perByte = ((await heldMemory()) - before) / 2000
    assert.ok(perByte < 2048, `a body of one byte held ${perByte.toFixed(0)} bytes`)
    for (const { stream } of open.splice(0)) stream.destroy(new Error('gone'))
    before = await heldMemory()
    const sent = 40 * (512 * 1024 + 1)
    for (let r = 0; r < 40; r++) {
      const half = fedReader('1048576', 1024 * 1024)
      for (let i = 0; i < 8; i++) half.stream.write(Buffer.alloc(64 * 1024, r))
      half.stream.write(Buffer.from([r]))
      open.push(half)
    }
    await new Promise((resolve) => setImmediate(resolve))
    const held = (await heldMemory()) - before
    assert.ok(held < 1.25 * sent, `${sent} bytes sent held ${held}`)
    for (const { stream } of open) stream.destroy(new Error('gone'))
  })

  it('a body trickled a byte a chunk and never ended holds about its size, not an object per chunk', async () => {
    // Fastify's reader kept each chunk until the end: 20 connections sending 100 KB a byte per TCP segment held 790 MB.
    // Enough bodies that what else the process allocates meanwhile (compiled code, the runner's own) is
    // a small share of each one's figure.
    const readers = 24
    const bytes = 60_000
    const before = await heldMemory()
    const open = []
    for (let r = 0; r < readers; r++) {
      const { stream, outcome } = fedReader('1000000', 1024 * 1024)
      // Each chunk a Buffer of its own, as each socket read is.
      for (let i = 0; i < bytes; i++) stream.write(Buffer.from([i & 0xff]))
      await new Promise((resolve) => setImmediate(resolve))
      open.push({ stream, outcome })
    }
    const held = (await heldMemory()) - before
    assert.ok(held < readers * 2 * bytes, `held ${(held / readers / 1024).toFixed(0)} KiB a body of ${bytes} bytes`)
    for (const { stream } of open) stream.destroy(new Error('gone'))
    for (const { outcome } of open) assert.equal((await outcome).err?.message, 'gone')
  })
})
