import { compiledSoon } from '../wasm-tiering.ts'

/**
 * The stand-in swap's first look at a masked client frame (src/sessions/socket-swap.ts): where, in
 * the payload of `length` bytes at `at` (its 4-byte mask right before it, RFC 6455 §5.3), the next
 * byte at or after `from` lies that unmasks to `_` or `\`. The swap checks each such byte for the
 * `_` of `access_token` or the `\` of a `\u` escape; a payload with neither cannot hold the key
 * and is neither copied, unmasked nor decoded.
 *
 * Every payload byte is unmasked and compared, 16 at a time, by a small WebAssembly function with
 * 128-bit SIMD (no bounds check per byte, two compares for 16 bytes), on a copy of the chunk's
 * bytes in its memory, made once per chunk. In JavaScript, even read as 32-bit words, each of the
 * bench's 125-byte broadcasts took some 950 instructions here, as much as the rest of the relay's
 * per-message cost beside a TCP pipe (docs/decisions.md, D222). Where WebAssembly's SIMD is not
 * available the same answer comes from a byte loop.
 *
 * The function, in WebAssembly's text form (`find(off, len, from)`, the payload at `off` in the
 * module's memory, its mask at `off - 4`):
 *
 *   mask = i32x4.splat(i32.load(off - 4))       ;; byte j of the vector: the mask's byte j mod 4
 *   i = from & -16; skip = from - i              ;; blocks start at payload offsets 0, 16, 32, …
 *   loop:
 *     if i >= len: return len
 *     bytes = v128.xor(v128.load(off + i), mask)
 *     hits = i8x16.bitmask(v128.or(i8x16.eq(bytes, splat 0x5f), i8x16.eq(bytes, splat 0x5c)))
 *     hits &= -1 << skip; skip = 0               ;; the block's bytes before `from` do not count
 *     if hits: return min(i + ctz(hits), len)    ;; nor do bytes past the payload
 *     i += 16
 *
 * A block starts at a payload offset that is a multiple of 4, so one vector of the mask unmasks all
 * of its bytes. The 16-byte load may read up to 15 bytes past the payload: the memory has room
 * for them, and what they hold is cut off by the `min`.
 */

/** Bytes the module's memory holds: the largest span copied (a frame read whole is at most 64 KiB and 14 bytes of head). */
const SPAN = 128 * 1024
/** Room past a span for the last block's 16-byte load. */
const SLACK = 16
const PAGES = Math.ceil((SPAN + SLACK) / 65_536)

const I32 = 0x7f
const V128 = 0x7b
const simd = (op: number) => [0xfd, op]
const local = { get: (i: number) => [0x20, i], set: (i: number) => [0x21, i], tee: (i: number) => [0x22, i] }
const i32 = (n: number) => [0x41, ...sleb(n)]
const splat16 = (byte: number) => [...simd(0x0c), ...Array<number>(16).fill(byte)]
const [OFF, LEN, FROM, MASK, BYTES, I, HITS, SKIP] = [0, 1, 2, 3, 4, 5, 6, 7]

function sleb(n: number): number[] {
  const out: number[] = []
  for (;;) {
    const byte = n & 0x7f
    n >>= 7
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) return [...out, byte]
    out.push(byte | 0x80)
  }
}

const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body]
function uleb(n: number): number[] {
  const out: number[] = []
  do {
    const byte = n & 0x7f
    n >>>= 7
    out.push(n === 0 ? byte : byte | 0x80)
  } while (n !== 0)
  return out
}

/** `find`'s body: its locals, then one instruction a line (WebAssembly's binary opcodes, named). */
const body: number[] = [
  [2, 2, V128, 3, I32], // locals: mask, bytes (v128); i, hits, skip (i32)
  local.get(OFF),
  i32(4),
  [0x6b], // i32.sub
  [0x28, 0, 0], // i32.load align=1 offset=0
  simd(0x11), // i32x4.splat
  local.set(MASK),
  local.get(FROM),
  i32(-16),
  [0x71], // i32.and
  local.set(I),
  local.get(FROM),
  local.get(I),
  [0x6b], // i32.sub
  local.set(SKIP),
  [0x02, 0x40], // block
  [0x03, 0x40], // loop
  local.get(I),
  local.get(LEN),
  [0x4f], // i32.ge_u
  [0x0d, 1], // br_if (out of the block)
  local.get(OFF),
  local.get(I),
  [0x6a], // i32.add
  [...simd(0x00), 0, 0], // v128.load align=1 offset=0
  local.get(MASK),
  simd(0x51), // v128.xor
  local.tee(BYTES),
  splat16(0x5f), // v128.const
  simd(0x23), // i8x16.eq
  local.get(BYTES),
  splat16(0x5c), // v128.const
  simd(0x23), // i8x16.eq
  simd(0x50), // v128.or
  simd(0x64), // i8x16.bitmask
  i32(-1),
  local.get(SKIP),
  [0x74], // i32.shl
  [0x71], // i32.and
  local.tee(HITS),
  [0x04, 0x40], // if
  local.get(I),
  local.get(HITS),
  [0x68], // i32.ctz
  [0x6a], // i32.add
  local.tee(I),
  local.get(LEN),
  local.get(I),
  local.get(LEN),
  [0x49], // i32.lt_u
  [0x1b], // select
  [0x0f], // return
  [0x0b], // end (if)
  i32(0),
  local.set(SKIP),
  local.get(I),
  i32(16),
  [0x6a], // i32.add
  local.set(I),
  [0x0c, 0], // br (to the loop)
  [0x0b], // end (loop)
  [0x0b], // end (block)
  local.get(LEN),
  [0x0b], // end (function)
].flat()

function moduleBytes(): Uint8Array<ArrayBuffer> {
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 3, I32, I32, I32, 1, I32]), // type 0: (i32, i32, i32) -> i32
    ...section(3, [1, 0]), // function 0 of type 0
    ...section(5, [1, 0, PAGES]), // one memory, PAGES pages
    ...section(7, [2, 1, 0x6d, 2, 0, 1, 0x66, 0, 0]), // exports: "m" memory 0, "f" function 0
    ...section(10, [1, ...uleb(body.length), ...body]),
  ])
}

type Find = (off: number, len: number, from: number) => number
let find: Find | undefined
let memory = new Uint8Array(0)
try {
  const instance = new WebAssembly.Instance(compiledSoon(moduleBytes()))
  find = instance.exports.f as Find
  memory = new Uint8Array((instance.exports.m as WebAssembly.Memory).buffer)
} catch {
  // No WebAssembly SIMD here: the byte loop below answers.
}

/** The bytes copied into the module's memory: `copied[copiedFrom, copiedTo)` at its address 0. */
let copied: Uint8Array | undefined
let copiedFrom = 0
let copiedTo = 0

/**
 * Forgets the copy: the next search copies its bytes again. The swap calls it for each chunk it
 * reads, so a copy never outlives the chunk it was made for (a buffer's bytes are only trusted to
 * stay as they are while the chunk is read).
 */
export function forgetCopy(): void {
  copied = undefined
}

/**
 * The offset in the payload of `length` bytes at `at` of `data` (masked, its mask the 4 bytes
 * before it) of the first byte at or after `from` that unmasks to `_` or `\`, or `length` if none.
 * The frames of one chunk are searched on one copy of it, made at the first of them.
 */
export function nextCandidate(data: Uint8Array, at: number, length: number, from: number): number {
  if (find === undefined || length + 4 > SPAN) return nextCandidateBytes(data, at, length, from)
  if (from >= length) return length
  const start = at - 4
  if (data !== copied || start < copiedFrom || at + length > copiedTo) {
    copiedFrom = start
    copiedTo = Math.min(data.length, start + SPAN)
    memory.set(data.subarray(copiedFrom, copiedTo))
    copied = data
  }
  return find(at - copiedFrom, length, from)
}

/** nextCandidate a byte at a time, without WebAssembly. */
export function nextCandidateBytes(data: Uint8Array, at: number, length: number, from: number): number {
  for (let k = from; k < length; k++) {
    const byte = data[at + k]! ^ data[at - 4 + (k & 3)]!
    if (byte === 0x5f || byte === 0x5c) return k
  }
  return length
}
