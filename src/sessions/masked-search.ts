import { compiledSoon } from '../wasm-budget.ts'

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
 * A second function, `walk` (its comment below), goes over a chunk's frames with a search of its
 * own (the payload's bytes compared still masked, the hits of a frame tested once): the frames the
 * swap would pass as they are (no masked text frame with `_` or `\` in it) are skipped in one
 * call, so the swap's JavaScript reads a frame's head only where it must (a frame cut by the
 * chunk's end, the 8-byte length form, a possible key). Per bench broadcast the parser went from
 * 471 to 289 instructions with it (docs/decisions.md, D223), the walk itself from 170 to 128
 * with its masked comparison (D265).
 *
 * A block starts at a payload offset that is a multiple of 4, so one vector of the mask unmasks all
 * of its bytes. The 16-byte loads may read up to 15 bytes past the payload: the memory has room
 * for them, and what they hold is cut off (by `find`'s `min`, from `walk`'s tail's bitmask).
 */

/** Bytes the module's memory holds: the largest span copied (a frame read whole is at most 64 KiB and 14 bytes of head). */
const SPAN = 128 * 1024
/** Room past a span for a last block's 16-byte load. */
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

/** The payload's mask, from the 4 bytes before `payload`, in each lane of a vector: into `mask`. */
const loadMask = (payload: number[], mask: number) => [
  ...payload,
  i32(4),
  [0x6b], // i32.sub
  [0x28, 0, 0], // i32.load align=1 offset=0
  simd(0x11), // i32x4.splat
  local.set(mask),
]

/**
 * The 16 bytes at `base + i` unmasked (`bytes` keeps them) and compared with `_` and `\`: one bit
 * a byte, set for a hit (i8x16.bitmask), left on the stack. Both functions' inner step.
 */
const blockHits = (base: number, i: number, mask: number, bytes: number) => [
  local.get(base),
  local.get(i),
  [0x6a], // i32.add
  [...simd(0x00), 0, 0], // v128.load align=1 offset=0
  local.get(mask),
  simd(0x51), // v128.xor
  local.tee(bytes),
  splat16(0x5f), // v128.const
  simd(0x23), // i8x16.eq
  local.get(bytes),
  splat16(0x5c), // v128.const
  simd(0x23), // i8x16.eq
  simd(0x50), // v128.or
  simd(0x64), // i8x16.bitmask
]

/** The 16 bytes at `base + i + offset` compared, still masked, with `t1` and `t2`: a hit a byte, on the stack. */
const maskedCompare = (base: number, i: number, t1: number, t2: number, bytes: number, offset: number) => [
  local.get(base),
  local.get(i),
  [0x6a], // i32.add
  [...simd(0x00), 0, offset], // v128.load align=1 offset (below 128: one byte)
  local.tee(bytes),
  local.get(t1),
  simd(0x23), // i8x16.eq
  local.get(bytes),
  local.get(t2),
  simd(0x23), // i8x16.eq
  simd(0x50), // v128.or
]

/** maskedCompare's hits ORed into `acc`. */
const accumulate = (base: number, i: number, t1: number, t2: number, bytes: number, acc: number, offset: number) => [
  ...maskedCompare(base, i, t1, t2, bytes, offset),
  local.get(acc),
  simd(0x50), // v128.or
  local.set(acc),
]

/** maskedCompare's hits at `base + i`, one bit a byte, on the stack. */
const maskedHits = (base: number, i: number, t1: number, t2: number, bytes: number) => [
  ...maskedCompare(base, i, t1, t2, bytes, 0),
  simd(0x64), // i8x16.bitmask
]

/** `find`'s body: its locals, then one instruction a line (WebAssembly's binary opcodes, named). */
const body: number[] = [
  [2, 2, V128, 3, I32], // locals: mask, bytes (v128); i, hits, skip (i32)
  loadMask(local.get(OFF), MASK),
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
  blockHits(OFF, I, MASK, BYTES),
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
].flat(2)

/**
 * `walk(pos, end)`'s body: from the frame at `pos`, the frames whole before `end` that the swap
 * would pass as they are, skipped; what it returns is the offset of the first frame the swap must
 * read itself: one not whole before `end` (its head or its payload), one with the 8-byte length
 * form, or a masked text frame (FIN, opcode 1: first byte 0x81) with a `_` or `\` in its payload.
 * Every other frame (binary, control, fragment, unmasked, compressed) is passed by the swap as it
 * is, as is a text frame with neither byte. The 2-byte length form's largest payload, 65,535 bytes,
 * is within the swap's MAX_READ, so any masked text frame here is one it would read.
 *
 *   loop:
 *     if end - pos < 2: return pos
 *     b1 = mem[pos + 1]; len = b1 & 0x7f
 *     if len == 127: return pos
 *     size = 2 + (len == 126 ? 2 : 0) + (b1 & 0x80 ? 4 : 0)
 *     if end - pos < size: return pos
 *     if len == 126: len = mem[pos + 2] << 8 | mem[pos + 3]
 *     payload = pos + size
 *     if payload + len > end: return pos
 *     if mem[pos] == 0x81 and b1 & 0x80:
 *       mask = i32x4.splat(i32.load(payload - 4))
 *       t1 = v128.xor(mask, splat 0x5f); t2 = v128.xor(mask, splat 0x5c)   ;; `_` and `\` masked
 *       acc = 0; i = 0
 *       while i + 32 <= len:                   ;; two blocks a turn, their hits ORed into acc
 *         acc |= eq(load(payload + i), t1) | eq(load(payload + i), t2) | (the same at i + 16)
 *         i += 32
 *       if i + 16 <= len: acc |= (the block at i); i += 16
 *       tail = i8x16.bitmask(eq(load(payload + i), t1) | eq(…, t2)) & ((1 << (len - i)) - 1)
 *       if tail or v128.any_true(acc): return pos
 *     pos = payload + len
 *
 * Whether a masked text frame holds a candidate is all `walk` answers (where is `find`'s, on the
 * frame `#read` then reads), so its payload is compared still masked, with `_` and `\` masked as
 * its bytes are (a byte unmasks to `_` exactly when it equals `_` masked), and the hits of its
 * blocks gathered in one vector tested once a frame: no unmasking, no test per block. The tail's
 * bytes past the payload are cut off from its bitmask; every other block lies within it.
 */
const WALK_POS = 0
const WALK_END = 1
const [W_B1, W_SIZE, W_LEN, W_I, W_PAYLOAD, W_MASK, W_BYTES, W_T1, W_T2, W_ACC] = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
const walkBody: number[] = [
  [2, 5, I32, 5, V128], // locals: b1, size, len, i, payload (i32); mask, bytes, t1, t2, acc (v128)
  [0x02, 0x40], // block (out)
  [0x03, 0x40], // loop (frame)
  local.get(WALK_END),
  local.get(WALK_POS),
  [0x6b], // i32.sub
  i32(2),
  [0x49], // i32.lt_u
  [0x0d, 1], // br_if out
  local.get(WALK_POS),
  [0x2d, 0, 1], // i32.load8_u offset=1
  local.tee(W_B1),
  i32(0x7f),
  [0x71], // i32.and
  local.tee(W_LEN),
  i32(127),
  [0x46], // i32.eq
  [0x0d, 1], // br_if out
  i32(2),
  local.get(W_LEN),
  i32(126),
  [0x46], // i32.eq
  i32(1),
  [0x74], // i32.shl
  [0x6a], // i32.add
  local.get(W_B1),
  i32(5),
  [0x76], // i32.shr_u
  i32(4),
  [0x71], // i32.and
  [0x6a], // i32.add
  local.set(W_SIZE),
  local.get(WALK_END),
  local.get(WALK_POS),
  [0x6b], // i32.sub
  local.get(W_SIZE),
  [0x49], // i32.lt_u
  [0x0d, 1], // br_if out
  local.get(W_LEN),
  i32(126),
  [0x46], // i32.eq
  [0x04, 0x40], // if
  local.get(WALK_POS),
  [0x2d, 0, 2], // i32.load8_u offset=2
  i32(8),
  [0x74], // i32.shl
  local.get(WALK_POS),
  [0x2d, 0, 3], // i32.load8_u offset=3
  [0x72], // i32.or
  local.set(W_LEN),
  [0x0b], // end (if)
  local.get(WALK_POS),
  local.get(W_SIZE),
  [0x6a], // i32.add
  local.tee(W_PAYLOAD),
  local.get(W_LEN),
  [0x6a], // i32.add
  local.get(WALK_END),
  [0x4b], // i32.gt_u
  [0x0d, 1], // br_if out
  local.get(WALK_POS),
  [0x2d, 0, 0], // i32.load8_u
  i32(0x81),
  [0x46], // i32.eq
  local.get(W_B1),
  i32(7),
  [0x76], // i32.shr_u
  [0x71], // i32.and
  [0x04, 0x40], // if (a masked text frame)
  loadMask(local.get(W_PAYLOAD), W_MASK),
  local.get(W_MASK),
  splat16(0x5f),
  simd(0x51), // v128.xor: `_` masked as the payload's bytes are
  local.set(W_T1),
  local.get(W_MASK),
  splat16(0x5c),
  simd(0x51), // v128.xor: `\` masked
  local.set(W_T2),
  splat16(0),
  local.set(W_ACC),
  i32(0),
  local.set(W_I),
  [0x02, 0x40], // block (pairs)
  [0x03, 0x40], // loop (32 bytes)
  local.get(W_I),
  i32(32),
  [0x6a], // i32.add
  local.get(W_LEN),
  [0x4b], // i32.gt_u
  [0x0d, 1], // br_if pairs
  accumulate(W_PAYLOAD, W_I, W_T1, W_T2, W_BYTES, W_ACC, 0),
  accumulate(W_PAYLOAD, W_I, W_T1, W_T2, W_BYTES, W_ACC, 16),
  local.get(W_I),
  i32(32),
  [0x6a], // i32.add
  local.set(W_I),
  [0x0c, 0], // br (32 bytes)
  [0x0b], // end (loop)
  [0x0b], // end (pairs)
  local.get(W_I),
  i32(16),
  [0x6a], // i32.add
  local.get(W_LEN),
  [0x4d], // i32.le_u
  [0x04, 0x40], // if (16 more)
  accumulate(W_PAYLOAD, W_I, W_T1, W_T2, W_BYTES, W_ACC, 0),
  local.get(W_I),
  i32(16),
  [0x6a], // i32.add
  local.set(W_I),
  [0x0b], // end (if)
  // the tail, under 16 bytes: its hits past the payload cut off
  maskedHits(W_PAYLOAD, W_I, W_T1, W_T2, W_BYTES),
  i32(1),
  local.get(W_LEN),
  local.get(W_I),
  [0x6b], // i32.sub
  [0x74], // i32.shl
  i32(1),
  [0x6b], // i32.sub
  [0x71], // i32.and
  local.get(W_ACC),
  simd(0x53), // v128.any_true
  [0x72], // i32.or
  [0x0d, 2], // br_if out (if a masked text frame, loop frame -> block out)
  [0x0b], // end (if a masked text frame)
  local.get(W_PAYLOAD),
  local.get(W_LEN),
  [0x6a], // i32.add
  local.set(WALK_POS),
  [0x0c, 0], // br (frame)
  [0x0b], // end (loop)
  [0x0b], // end (block)
  local.get(WALK_POS),
  [0x0b], // end (function)
].flat(2)

function moduleBytes(): Uint8Array<ArrayBuffer> {
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    // types: 0 (i32, i32, i32) -> i32, 1 (i32, i32) -> i32
    ...section(1, [2, 0x60, 3, I32, I32, I32, 1, I32, 0x60, 2, I32, I32, 1, I32]),
    ...section(3, [2, 0, 1]), // functions: 0 of type 0 (find), 1 of type 1 (walk)
    ...section(5, [1, 0, PAGES]), // one memory, PAGES pages
    // exports: "m" memory 0, "f" function 0, "w" function 1
    ...section(7, [3, 1, 0x6d, 2, 0, 1, 0x66, 0, 0, 1, 0x77, 0, 1]),
    ...section(10, [2, ...uleb(body.length), ...body, ...uleb(walkBody.length), ...walkBody]),
  ])
}

type Find = (off: number, len: number, from: number) => number
type Walk = (pos: number, end: number) => number
let find: Find | undefined
let walk: Walk | undefined
let memory = new Uint8Array(0)
try {
  const instance = new WebAssembly.Instance(compiledSoon(moduleBytes()))
  find = instance.exports.f as Find
  walk = instance.exports.w as Walk
  memory = new Uint8Array((instance.exports.m as WebAssembly.Memory).buffer)
} catch {
  // No WebAssembly SIMD here: the byte loop below answers.
}

/** The bytes copied into the module's memory: `copied[copiedFrom, copiedTo)` at its address 0. */
let copied: Uint8Array | undefined
let copiedFrom = 0
let copiedTo = 0

/** Copies `data` from `from` (as much as the memory holds) to the module's address 0. */
function copyFrom(data: Uint8Array, from: number): void {
  copiedFrom = from
  copiedTo = Math.min(data.length, from + SPAN)
  // A chunk copied whole from its start, the usual case, is set as it is: no view made of it.
  memory.set(from === 0 && copiedTo === data.length ? data : data.subarray(copiedFrom, copiedTo))
  copied = data
}

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
  if (data !== copied || start < copiedFrom || at + length > copiedTo) copyFrom(data, start)
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

/**
 * The offset of the first frame from the one at `at` (a frame's start) up to `end` in `data` that
 * the swap must read itself (walk's comment says which), the frames before it being ones it would
 * pass as they are: `at` itself without WebAssembly.
 */
export function skipFrames(data: Uint8Array, at: number, end: number): number {
  if (walk === undefined) return at
  if (data !== copied || at < copiedFrom || at >= copiedTo) copyFrom(data, at)
  return copiedFrom + walk(at - copiedFrom, Math.min(end, copiedTo) - copiedFrom)
}
