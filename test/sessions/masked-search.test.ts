import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { forgetCopy, nextCandidate, nextCandidateBytes, skipFrames } from '../../src/sessions/masked-search.ts'

/** Every offset of a `_` or `\` in the unmasked payload, at or after `from`, as the plain reading finds them. */
function plain(payload: Uint8Array, from: number): number[] {
  const out: number[] = []
  for (let k = from; k < payload.length; k++) if (payload[k] === 0x5f || payload[k] === 0x5c) out.push(k)
  return out
}

/** The candidates nextCandidate gives one after another, from `from`. */
function walk(next: typeof nextCandidate, data: Uint8Array, at: number, length: number, from: number): number[] {
  const out: number[] = []
  for (let k = next(data, at, length, from); k < length; k = next(data, at, length, k + 1)) out.push(k)
  return out
}

/** `payloads` as masked frames' payloads one after another in one buffer at `offset` of a larger one. */
function chunk(offset: number, frames: Array<{ payload: Uint8Array; mask: Uint8Array }>) {
  const parts: Uint8Array[] = [new Uint8Array(offset).fill(0x5f)]
  const at: number[] = []
  let n = offset
  for (const { payload, mask } of frames) {
    const masked = Buffer.from(payload).map((b, i) => b ^ mask[i & 3]!)
    parts.push(Buffer.from([0x81, 0x80 | 126, 0, 0]), mask, masked)
    at.push(n + 8 - offset)
    n += 8 + payload.length
  }
  // Bytes after the last payload that unmask to `_` under its mask: a search must not count them.
  const last = frames.at(-1)!
  parts.push(Uint8Array.from({ length: 20 }, (_, j) => 0x5f ^ last.mask[(last.payload.length + j) & 3]!))
  return { data: Buffer.concat(parts).subarray(offset), at }
}

// Payload bytes with many `_`, `\\` and near misses (`^`, `]`) among them.
const bytes = fc
  .uint8Array({ maxLength: 200 })
  .map((b) => b.map((x) => (x % 2 === 0 ? [0x5f, 0x5c, 0x5e, 0x5d][(x >> 1) % 4]! : x)))
const mask = fc.uint8Array({ minLength: 4, maxLength: 4 })

describe("the stand-in swap's search of masked payloads", () => {
  it('finds every `_` and `\\` of each payload of a chunk, in order, and nothing past its end', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 15 }),
        fc.array(fc.record({ payload: bytes, mask }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 40 }),
        (offset, frames, from) => {
          const { data, at } = chunk(offset, frames)
          forgetCopy()
          frames.forEach(({ payload }, i) => {
            const want = plain(payload, Math.min(from, payload.length))
            assert.deepEqual(walk(nextCandidate, data, at[i]!, payload.length, Math.min(from, payload.length)), want)
            assert.deepEqual(
              walk(nextCandidateBytes, data, at[i]!, payload.length, Math.min(from, payload.length)),
              want,
            )
          })
        },
      ),
      { numRuns: 1000 },
    )
  })

  it('a new chunk in the same buffer is searched anew once the copy is forgotten', () => {
    const m = Buffer.from([1, 2, 3, 4])
    const { data, at } = chunk(0, [{ payload: Buffer.from('no hit here at all'), mask: m }])
    forgetCopy()
    assert.equal(nextCandidate(data, at[0]!, 18, 0), 18)
    data[at[0]! + 5] = 0x5f ^ m[5 & 3]!
    forgetCopy()
    assert.equal(nextCandidate(data, at[0]!, 18, 0), 5)
  })

  it('frames far apart in a large buffer and frames larger than the copy are searched whole', () => {
    const m = Buffer.from([0x55, 0xaa, 0x0f, 0xf0])
    const payloads = [200_000, 60_000, 70_000, 100].map((n, i) => {
      const p = Buffer.alloc(n, 'a')
      p[n - 1 - i] = 0x5c
      return { payload: p, mask: m }
    })
    const { data, at } = chunk(3, payloads)
    forgetCopy()
    payloads.forEach(({ payload }, i) =>
      assert.deepEqual(walk(nextCandidate, data, at[i]!, payload.length, 0), plain(payload, 0)),
    )
  })
})

/** A frame: first byte, payload (unmasked), mask if masked; the 2-byte or 8-byte length form as its length asks. */
function frameBytes(b0: number, payload: Uint8Array, mask: Uint8Array | undefined, long: boolean): Buffer {
  const n = payload.length
  const head = long
    ? Buffer.concat([Buffer.from([b0, 127]), Buffer.alloc(8)])
    : n < 126
      ? Buffer.from([b0, n])
      : Buffer.from([b0, 126, n >> 8, n & 0xff])
  if (long) head.writeUInt32BE(n, 6)
  if (mask === undefined) return Buffer.concat([head, payload])
  head[1]! |= 0x80
  return Buffer.concat([head, mask, Buffer.from(payload).map((b, i) => b ^ mask[i & 3]!)])
}

/** walk's answer read plainly: the first frame from `at` not whole before `end`, 8-byte long, or masked text with a `_` or `\`. */
function plainSkip(data: Buffer, at: number, end: number): number {
  for (;;) {
    if (end - at < 2) return at
    const len7 = data[at + 1]! & 0x7f
    const masked = (data[at + 1]! & 0x80) !== 0
    if (len7 === 127) return at
    const size = 2 + (len7 === 126 ? 2 : 0) + (masked ? 4 : 0)
    if (end - at < size) return at
    const length = len7 === 126 ? data.readUInt16BE(at + 2) : len7
    if (at + size + length > end) return at
    if (data[at] === 0x81 && masked) {
      const payload = data.subarray(at + size, at + size + length).map((b, i) => b ^ data[at + size - 4 + (i & 3)]!)
      if (payload.includes(0x5f) || payload.includes(0x5c)) return at
    }
    at += size + length
  }
}

describe("the stand-in swap's walk over the frames it passes as they are", () => {
  it('stops where a plain reading of the frames stops, whatever the frames and wherever the chunk ends', () => {
    const frame = fc
      .record({
        b0: fc.constantFrom(0x81, 0x82, 0x01, 0x80, 0x89, 0x8a, 0x88, 0xc1, 0x81),
        payload: fc.oneof(
          bytes,
          fc.integer({ min: 100, max: 400 }).map((n) => new Uint8Array(n).fill(0x61)),
        ),
        mask: fc.option(mask, { nil: undefined, freq: 5 }),
        long: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      })
      .map(({ b0, payload, mask, long }) => frameBytes(b0, payload, mask, long))
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 7 }),
        fc.array(frame, { minLength: 1, maxLength: 8 }),
        fc.nat(),
        (offset, frames, cut) => {
          const data = Buffer.concat([Buffer.alloc(offset, 0x5f), ...frames]).subarray(offset)
          const end = cut % (data.length + 1)
          forgetCopy()
          assert.equal(skipFrames(data, 0, end), plainSkip(data, 0, end))
          // From a later frame of the same chunk, on the copy already made.
          const second = frames[0]!.length
          if (second <= end) assert.equal(skipFrames(data, second, end), plainSkip(data, second, end))
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('finds a lone `_` or `\\` at every offset of payloads of every length up to 160 bytes, no near miss, nothing past the end', () => {
    // Each payload is plain text but for one byte, and what follows it unmasks to `_` under its
    // mask: every block of the payload (the pairs, the single one, the tail cut at the payload's
    // end) is searched, and nothing past it.
    const mask = Buffer.from([0x3c, 0xa5, 0x0f, 0xd2])
    for (let length = 0; length <= 160; length++)
      for (let k = -1; k < length; k++)
        for (const byte of [0x5f, 0x5c, 0x5d, 0x5e]) {
          // k = -1: the payload without the byte.
          const payload = new Uint8Array(length).fill(0x61)
          if (k >= 0) payload[k] = byte
          const after = Uint8Array.from({ length: 40 }, (_, j) => 0x5f ^ mask[(length + j) & 3]!)
          const data = Buffer.concat([frameBytes(0x81, payload, mask, false), after])
          const end = data.length - after.length
          forgetCopy()
          const stops = k >= 0 && (byte === 0x5f || byte === 0x5c)
          assert.equal(skipFrames(data, 0, end), stops ? 0 : end, `${length} ${k} ${byte}`)
        }
  })
})
