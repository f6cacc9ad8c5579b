import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { closeFrame, FrameCursor } from '../../src/services/frames.ts'

function frame(length: number, masked = false): Buffer {
  const head =
    length < 126
      ? [0x82, length]
      : length < 65536
        ? [0x82, 126, length >> 8, length & 0xff]
        : [0x82, 127, 0, 0, 0, 0, (length >>> 24) & 0xff, (length >> 16) & 0xff, (length >> 8) & 0xff, length & 0xff]
  if (masked) head[1]! |= 0x80
  return Buffer.concat([Buffer.from(head), masked ? Buffer.from([1, 2, 3, 4]) : Buffer.alloc(0), Buffer.alloc(length)])
}

test('frame boundaries across every length form, masked or not, whatever the chunking', () => {
  const stream = Buffer.concat([frame(0), frame(5), frame(125, true), frame(300), frame(70_000), frame(2, true)])
  const ends = new Set<number>()
  let at = 0
  for (const f of [frame(0), frame(5), frame(125, true), frame(300), frame(70_000), frame(2, true)])
    ends.add((at += f.length))
  for (const size of [1, 3, 7, 1000, stream.length]) {
    const cursor = new FrameCursor()
    for (let i = 0; i < stream.length; i += size) {
      const chunk = stream.subarray(i, i + size)
      assert.equal(cursor.read(chunk), chunk.length)
      assert.equal(cursor.atBoundary, ends.has(i + chunk.length), `chunks of ${size}, after ${i + chunk.length}`)
    }
  }
})

test('with stop, reading ends at the first boundary: the rest of the current frame and nothing after', () => {
  const cursor = new FrameCursor()
  const two = Buffer.concat([frame(10), frame(10)])
  assert.equal(cursor.read(two.subarray(0, 5)), 5)
  assert.equal(cursor.read(two.subarray(5), true), 7)
  assert.equal(cursor.atBoundary, true)
  assert.equal(cursor.read(two.subarray(12), true), 0, 'between frames: nothing more')
})

test('the close frame carries its code big-endian, unmasked', () => {
  assert.deepEqual([...closeFrame(1001)], [0x88, 0x02, 0x03, 0xe9])
})

test('boundaries over generated frames and cuts: every chunk read whole, or with stop up to the next boundary', () => {
  const framed = fc.oneof(
    fc.integer({ min: 0, max: 125 }),
    fc.integer({ min: 126, max: 300 }),
    fc.constantFrom(65_535, 65_536, 70_000),
  )
  fc.assert(
    fc.property(
      fc.array(fc.tuple(framed, fc.boolean()), { minLength: 1, maxLength: 12 }),
      fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 20 }),
      fc.nat(),
      (specs, cuts, stopAt) => {
        const frames = specs.map(([length, masked]) => frame(length, masked))
        const stream = Buffer.concat(frames)
        const ends = [0]
        let sum = 0
        for (const f of frames) ends.push((sum += f.length))
        const cursor = new FrameCursor()
        let at = 0
        for (let i = 0; at < stream.length; i++) {
          const chunk = stream.subarray(at, at + cuts[i % cuts.length]! * (i % 3 === 2 ? 97 : 1))
          if (i === stopAt % 16) {
            // The next boundary at or after `at`, if within this chunk.
            const next = ends.find((e) => e >= at)!
            const read = cursor.read(chunk, true)
            assert.equal(read, Math.min(next, at + chunk.length) - at)
            assert.equal(cursor.atBoundary, next <= at + chunk.length)
            if (read < chunk.length) return
            at += chunk.length
            continue
          }
          assert.equal(cursor.read(chunk), chunk.length)
          at += chunk.length
          assert.equal(cursor.atBoundary, ends.includes(at), `after ${at}`)
        }
      },
    ),
    { numRuns: 300 },
  )
})
