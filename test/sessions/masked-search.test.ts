import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { forgetCopy, nextCandidate, nextCandidateBytes } from '../../src/sessions/masked-search.ts'

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
