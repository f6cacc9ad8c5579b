import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { holdsNeedle, MAX_STRUCTURE, PhoenixFrames, type TokenSwap } from '../../src/sessions/socket-swap.ts'
import { heldMemory } from '../support/held-memory.ts'

/**
 * The swap's parser reads frames in place and sends runs of them in one piece; these compare what
 * it sends with a plain reading of the same stream (whole, frame by frame, every text unmasked and
 * decoded), over generated streams cut into generated chunks.
 */

/** A frame: first byte (FIN, RSV, opcode), payload, and its mask when the sender masked it. */
function encode(b0: number, payload: Uint8Array, mask?: Uint8Array): Buffer {
  const n = payload.length
  const head =
    n < 126
      ? Buffer.from([b0, n])
      : n < 65_536
        ? Buffer.from([b0, 126, n >> 8, n & 0xff])
        : Buffer.concat([Buffer.from([b0, 127]), Buffer.alloc(8)])
  if (n >= 65_536) head.writeUInt32BE(n, 6)
  if (mask === undefined) return Buffer.concat([head, payload])
  head[1]! |= 0x80
  const body = Buffer.from(payload)
  for (let i = 0; i < n; i++) body[i]! ^= mask[i & 3]!
  return Buffer.concat([head, mask, body])
}

interface Frame {
  b0: number
  masked: boolean
  payload: string
}

/** The frames of `data`, payloads unmasked (as hex: binary frames need not be UTF-8). */
function decode(data: Buffer): Frame[] {
  const out: Frame[] = []
  let at = 0
  while (at < data.length) {
    const masked = (data[at + 1]! & 0x80) !== 0
    let length = data[at + 1]! & 0x7f
    let offset = at + 2
    if (length === 126) {
      length = data.readUInt16BE(offset)
      offset += 2
    } else if (length === 127) {
      length = Number(data.readBigUInt64BE(offset))
      offset += 8
    }
    const payload = Buffer.from(data.subarray(offset + (masked ? 4 : 0), offset + (masked ? 4 : 0) + length))
    if (masked) for (let i = 0; i < length; i++) payload[i]! ^= data[offset + (i & 3)]!
    out.push({ b0: data[at]!, masked, payload: payload.toString('hex') })
    at = offset + (masked ? 4 : 0) + length
  }
  return out
}

const TOKENS: Record<string, string | undefined | { refused: string }> = {
  'stand-in-1': 'REAL-1',
  // Longer than the stand-in: the frame's length form can change.
  'stand-in-2': `REAL-2-${'r'.repeat(120)}`,
  nobody: undefined,
  bad: { refused: 'retired' },
}
const swapOf = (token: string) => TOKENS[token]
const asyncSwap: TokenSwap = async (token) => swapOf(token)

/**
 * What the swap must send: each frame read whole and plainly, up to a refused one. A text frame
 * that may spell `access_token` (the word, or a `\u` escape) and is not too large or too nested is
 * decoded; a Phoenix `phx_join` or `access_token` message with a token in it (serializer 2.0.0's
 * array, its first five elements, or 1.0.0's object) leaves serialized again, its token swapped
 * when it is a stand-in.
 */
function reference(data: Buffer): { frames: Frame[]; refused?: string } {
  const frames: Frame[] = []
  for (const frame of decode(data)) {
    const text = Buffer.from(frame.payload, 'hex').toString('utf8')
    const length = frame.payload.length / 2
    const structure = [...text].filter((c) => '[{:,'.includes(c)).length
    if (
      frame.b0 !== 0x81 ||
      !frame.masked ||
      length > 64 * 1024 ||
      !(text.includes('access_token') || text.includes('\\u')) ||
      structure > MAX_STRUCTURE
    ) {
      frames.push(frame)
      continue
    }
    let message: unknown
    try {
      message = JSON.parse(text)
    } catch {
      frames.push(frame)
      continue
    }
    const [event, body] = Array.isArray(message)
      ? message.length >= 5
        ? [message[3], message[4]]
        : []
      : typeof message === 'object' && message !== null
        ? [(message as Record<string, unknown>).event, (message as Record<string, unknown>).payload]
        : []
    const token =
      typeof body === 'object' && body !== null && !Array.isArray(body)
        ? (body as { access_token?: unknown }).access_token
        : undefined
    if ((event !== 'phx_join' && event !== 'access_token') || typeof token !== 'string') {
      frames.push(frame)
      continue
    }
    const real = swapOf(token)
    if (typeof real === 'object') return { frames, refused: real.refused }
    if (real !== undefined) (body as { access_token: string }).access_token = real
    frames.push({ b0: 0x81, masked: true, payload: Buffer.from(JSON.stringify(message)).toString('hex') })
  }
  return { frames }
}

/**
 * `data` cut into chunks of the given sizes (cycled) through a swap, each read as it comes (those
 * that arrive while a token is swapped wait behind it): what it sends, and its refusal.
 */
async function through(data: Buffer, sizes: number[]): Promise<{ out: Buffer[]; refused?: string }> {
  const out: Buffer[] = []
  let refused: string | undefined
  const frames = new PhoenixFrames(
    asyncSwap,
    (bytes) => out.push(bytes),
    (fault) => (refused = fault),
  )
  const reads: Array<Promise<void> | undefined> = []
  for (let at = 0, i = 0; at < data.length; i++) {
    const size = sizes[i % sizes.length]!
    reads.push(frames.read(data.subarray(at, at + size)))
    at += size
  }
  await Promise.all(reads)
  return { out, ...(refused === undefined ? {} : { refused }) }
}

const mask = fc.uint8Array({ minLength: 4, maxLength: 4 })
const text = fc.string({ maxLength: 40 })
const message = (event: string, body: unknown) => JSON.stringify(['1', '2', 'realtime:room', event, body])
const utf8 = (s: string) => Buffer.from(s)
const frame: fc.Arbitrary<Buffer> = fc.oneof(
  // Token messages, swapped, left, refused, or of another event.
  fc
    .tuple(
      fc.constantFrom('phx_join', 'access_token', 'broadcast'),
      fc.constantFrom(...Object.keys(TOKENS), 'other'),
      fc.string({ maxLength: 8 }),
      mask,
    )
    .map(([event, token, pad, m]) => encode(0x81, utf8(message(event, { pad, access_token: token })), m)),
  // Broadcasts, the needle anywhere in them (or a near miss), at every phase of the mask.
  fc
    .tuple(text, fc.constantFrom('access_token', 'access_toke', 'ccess_token', 'access_tokem', ''), text, mask)
    .map(([a, needle, b, m]) => encode(0x81, utf8(message('broadcast', { a: a + needle + b })), m)),
  fc.tuple(text, mask).map(([t, m]) => encode(0x81, utf8(`${t}access_token${t}`), m)),
  // The token message in Phoenix's other spellings: 1.0.0's object, more than five elements, an
  // escaped key or event, a repeated key (the last is the one JSON.parse keeps).
  fc
    .tuple(fc.constantFrom('phx_join', 'access_token', 'broadcast'), fc.constantFrom(...Object.keys(TOKENS)), mask)
    .map(([event, token, m]) =>
      encode(
        0x81,
        utf8(JSON.stringify({ topic: 'realtime:room', event, payload: { access_token: token }, ref: '1' })),
        m,
      ),
    ),
  fc
    .tuple(fc.constantFrom(...Object.keys(TOKENS)), fc.array(text, { maxLength: 3 }), mask)
    .map(([token, extra, m]) =>
      encode(0x81, utf8(JSON.stringify(['1', '2', 'realtime:room', 'phx_join', { access_token: token }, ...extra])), m),
    ),
  fc
    .tuple(
      fc.constantFrom(...Object.keys(TOKENS)),
      fc.constantFrom('\\u0061ccess_token', 'access\\u005ftoken', 'access_token'),
      fc.constantFrom('phx_join', 'phx\\u005fjoin'),
      mask,
    )
    .map(([token, key, event, m]) => encode(0x81, utf8(`["1","2","t","${event}",{"${key}":"${token}"}]`), m)),
  fc
    .tuple(fc.constantFrom(...Object.keys(TOKENS)), fc.constantFrom(...Object.keys(TOKENS)), mask)
    .map(([first, last, m]) =>
      encode(0x81, utf8(`["1","2","t","phx_join",{"access_token":"${first}","access_token":"${last}"}]`), m),
    ),
  // More structure than the parser reads: passed as it came, whatever it holds.
  fc
    .tuple(
      fc.constantFrom(...Object.keys(TOKENS)),
      fc.integer({ min: MAX_STRUCTURE - 8, max: MAX_STRUCTURE + 8 }),
      mask,
    )
    .map(([token, n, m]) =>
      encode(0x81, utf8(`["1","2","t","phx_join",{"access_token":"${token}","x":"${','.repeat(n)}"}]`), m),
    ),
  // Binary, unmasked, compressed (RSV1), a ping between fragments, a fragmented join, 126-length forms.
  fc.tuple(fc.uint8Array({ maxLength: 200 }), mask).map(([b, m]) => encode(0x82, b, m)),
  text.map((t) => encode(0x81, utf8(message('phx_join', { access_token: 'stand-in-1', t })))),
  mask.map((m) => encode(0xc1, utf8(message('phx_join', { access_token: 'stand-in-1' })), m)),
  fc.tuple(mask, mask, mask).map(([m1, m2, m3]) => {
    const join = utf8(message('phx_join', { access_token: 'stand-in-1' }))
    return Buffer.concat([
      encode(0x01, join.subarray(0, 10), m1),
      encode(0x89, utf8('ping'), m2),
      encode(0x80, join.subarray(10), m3),
    ])
  }),
  fc
    .tuple(fc.integer({ min: 100, max: 3000 }), mask)
    .map(([n, m]) => encode(0x81, utf8(message('phx_join', { access_token: 'stand-in-2', p: 'p'.repeat(n) })), m)),
)
const large = (token: string) =>
  encode(0x81, utf8(message('phx_join', { access_token: token, p: 'p'.repeat(70_000) })), Buffer.from([9, 8, 7, 6]))

describe("Realtime's socket: the swap's parser against a plain reading of the frames", () => {
  it('finds the needle in the masked payload exactly where unmasking and searching would', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 7 }),
        text,
        fc.constantFrom('access_token', 'access_toke', 'ccess_token', '_', '', '\\u', '\\', 'u', ']', '^', ']^\\_'),
        text,
        mask,
        (before, a, needle, b, m) => {
          const payload = utf8(a + needle + b)
          const frame = encode(0x81, payload, m)
          // The frame at an offset in a larger chunk, as in a relay.
          const data = Buffer.concat([before, frame])
          const at = before.length + frame.length - payload.length
          assert.equal(
            holdsNeedle(data, at, payload.length),
            payload.includes('access_token') || payload.includes('\\u'),
          )
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('sends what the plain reading sends, whatever the frames and however they are cut', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(frame, { minLength: 1, maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 8 }),
        async (frames, sizes) => {
          const data = Buffer.concat(frames)
          const want = reference(data)
          const got = await through(data, sizes)
          assert.deepEqual(decode(Buffer.concat(got.out)), want.frames)
          assert.equal(got.refused, want.refused)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('a join split at every byte, frames around it, and a frame over 64 KiB pass as the plain reading has them', async () => {
    const stream = Buffer.concat([
      encode(0x81, utf8(message('broadcast', { x: 1 })), Buffer.from([1, 2, 3, 4])),
      encode(0x81, utf8(message('phx_join', { access_token: 'stand-in-1' })), Buffer.from([5, 6, 7, 8])),
      encode(0x89, utf8('ping'), Buffer.from([0, 0, 0, 0])),
      encode(0x81, utf8(message('access_token', { access_token: 'stand-in-2' })), Buffer.from([0xff, 0, 0xff, 0])),
    ])
    const want = reference(stream).frames
    for (let cut = 1; cut < stream.length; cut++) {
      const got = await through(stream, [cut, stream.length])
      assert.deepEqual(decode(Buffer.concat(got.out)), want, `cut at ${cut}`)
    }
    const big = Buffer.concat([large('stand-in-1'), stream])
    const got = await through(big, [1000])
    assert.ok(
      Buffer.concat(got.out)
        .subarray(0, large('x').length)
        .equals(big.subarray(0, large('x').length)),
    )
    assert.deepEqual(decode(Buffer.concat(got.out)), reference(big).frames)
  })

  it('the key at each phase of the mask and across a 16-byte block, the stream cut at every byte around it', async () => {
    const m = Buffer.from([0x5f ^ 0x61, 0x5c, 0x00, 0xff])
    for (const key of ['access_token', '\\u0061ccess_token', 'access\\u005ftoken']) {
      for (let pad = 0; pad < 20; pad++) {
        const join = `["1","2","t","phx_join",{"${'p'.repeat(pad)}":1,"${key}":"stand-in-1"}]`
        const before = encode(0x81, utf8(message('broadcast', { pad })), m)
        const stream = Buffer.concat([before, encode(0x81, utf8(join), m), before])
        const want = reference(stream).frames
        const swapped = (frames: Frame[]) => Buffer.from(frames[1]!.payload, 'hex').toString().includes('"REAL-1"')
        assert.ok(swapped(want))
        const keyAt = before.length + 6 + join.indexOf(key)
        for (let cut = keyAt - 2; cut <= keyAt + key.length + 2; cut++) {
          const got = await through(stream, [cut, stream.length])
          const frames = decode(Buffer.concat(got.out))
          assert.deepEqual(frames, want, `${key}, pad ${pad}, cut at ${cut}`)
          assert.ok(swapped(frames))
        }
      }
    }
  })

  it('nothing from a refused stand-in on reaches Realtime, in the same chunk or later ones', async () => {
    const m = Buffer.from([3, 1, 4, 1])
    const before = encode(0x81, utf8(message('broadcast', { x: 1 })), m)
    const refused = encode(0x81, utf8(message('phx_join', { access_token: 'bad' })), m)
    const after = encode(0x81, utf8(message('phx_join', { access_token: 'stand-in-1' })), m)
    const got = await through(Buffer.concat([before, refused, after, after]), [before.length + refused.length + 3, 50])
    assert.equal(got.refused, 'retired')
    assert.ok(Buffer.concat(got.out).equals(before))
  })

  it('a frame a client cuts into 1-byte segments and never ends holds one buffer of its size, not one per segment', async () => {
    // An outside review held 8.9 MiB per socket this way (each segment a Buffer kept until the frame was whole).
    const m = Buffer.from([9, 8, 7, 6])
    const payload = utf8(message('broadcast', { x: 'y'.repeat(64_900) }))
    const whole = encode(0x81, payload, m)
    // Enough sockets that what else the process allocates meanwhile is a small share of each one's figure.
    const sockets = 24
    const before = await heldMemory()
    const all: PhoenixFrames[] = []
    const sent: Buffer[] = []
    for (let s = 0; s < sockets; s++) {
      const frames = new PhoenixFrames(
        asyncSwap,
        (bytes) => sent.push(bytes),
        () => {},
      )
      // All but the frame's last byte, one byte a read (each read a Buffer of its own, as a socket's are).
      for (let at = 0; at < whole.length - 1; at++)
        assert.equal(frames.read(Buffer.from(whole.subarray(at, at + 1))), undefined)
      all.push(frames)
    }
    const held = (await heldMemory()) - before
    assert.equal(sent.length, 0, 'nothing of an unfinished frame is sent')
    assert.ok(held < sockets * 128 * 1024, `held ${(held / sockets / 1024).toFixed(0)} KiB a socket`)
    // The last byte: the frame leaves whole, as it came.
    for (const frames of all) assert.equal(frames.read(whole.subarray(-1)), undefined)
    assert.equal(sent.length, sockets)
    for (const bytes of sent) assert.ok(bytes.equals(whole))
  })

  it('a run of frames without a token leaves in one piece, as it came', async () => {
    const m = Buffer.from([0x12, 0x34, 0x56, 0x78])
    const run = Buffer.concat(Array.from({ length: 32 }, (_, i) => encode(0x81, utf8(message('broadcast', { i })), m)))
    const got = await through(run, [run.length])
    assert.equal(got.out.length, 1)
    assert.ok(got.out[0]!.equals(run))
  })
})
