import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { maskedTextFrame, PhoenixFrames } from '../../src/sessions/socket-swap.ts'

/** The client frames in `data` (RFC 6455 §5.2), unmasked: opcode, FIN and text. */
function frames(data: Buffer): Array<{ fin: boolean; opcode: number; text: string }> {
  const out: Array<{ fin: boolean; opcode: number; text: string }> = []
  let at = 0
  while (at < data.length) {
    let length = data[at + 1]! & 0x7f
    let offset = at + 2
    if (length === 126) {
      length = data.readUInt16BE(offset)
      offset += 2
    } else if (length === 127) {
      length = Number(data.readBigUInt64BE(offset))
      offset += 8
    }
    const mask = data.subarray(offset, offset + 4)
    const payload = Buffer.from(data.subarray(offset + 4, offset + 4 + length))
    for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!
    out.push({ fin: (data[at]! & 0x80) !== 0, opcode: data[at]! & 0x0f, text: payload.toString() })
    at = offset + 4 + length
  }
  return out
}

/** Sends `chunks` through a swap (each as it comes, not waiting for the one before) and collects what comes out. */
async function through(chunks: Buffer[], swap: (token: string) => Promise<string | undefined>): Promise<Buffer> {
  const out: Buffer[] = []
  const frames = new PhoenixFrames(
    swap,
    (bytes) => out.push(bytes),
    () => {},
  )
  await Promise.all(chunks.map((chunk) => frames.read(chunk)))
  return Buffer.concat(out)
}

const join = (token: string) =>
  JSON.stringify(['1', '1', 'realtime:room', 'phx_join', { config: {}, access_token: token, version: '2' }])

describe("Realtime's socket: stand-ins in join and token messages", () => {
  it('swaps the access token of phx_join and access_token messages, and nothing else', async () => {
    const heartbeat = JSON.stringify([null, '2', 'phoenix', 'heartbeat', {}])
    const push = JSON.stringify(['1', '3', 'realtime:room', 'access_token', { access_token: 'stand-in' }])
    const broadcast = JSON.stringify(['1', '4', 'realtime:room', 'broadcast', { access_token: 'stand-in' }])
    const input = [join('stand-in'), heartbeat, push, broadcast].map(maskedTextFrame)
    const out = frames(await through(input, async (t) => (t === 'stand-in' ? 'REAL' : undefined)))
    assert.deepEqual(
      out.map((f) => JSON.parse(f.text)[4].access_token ?? null),
      ['REAL', null, 'REAL', 'stand-in'],
    )
  })

  it('frames split across chunks, and several in one chunk, come out whole and in order', async () => {
    const all = Buffer.concat([maskedTextFrame(join('s1')), maskedTextFrame(join('s2'))])
    const chunks = [all.subarray(0, 1), all.subarray(1, 9), all.subarray(9, all.length - 3), all.subarray(-3)]
    const out = frames(await through(chunks, async (t) => `real-${t}`))
    assert.deepEqual(
      out.map((f) => JSON.parse(f.text)[4].access_token),
      ['real-s1', 'real-s2'],
    )
  })

  it('a token it does not swap leaves as it was read; binary, fragmented and large frames pass byte for byte', async () => {
    const unswapped = maskedTextFrame(join('nobody'))
    const binary = Buffer.from(maskedTextFrame(join('x')))
    binary[0] = 0x82
    const fragment = Buffer.from(maskedTextFrame(join('x')))
    fragment[0] = 0x01
    const large = maskedTextFrame(
      JSON.stringify(['1', '1', 't', 'phx_join', { access_token: 'x', pad: 'p'.repeat(70_000) }]),
    )
    const input = Buffer.concat([unswapped, binary, fragment, large])
    const calls: string[] = []
    const out = await through([input], async (t) => {
      calls.push(t)
      return undefined
    })
    // The token message serialized again (the same text here), under a mask of its own.
    assert.equal(out.length, input.length)
    assert.equal(frames(out.subarray(0, unswapped.length))[0]!.text, join('nobody'))
    assert.ok(out.subarray(unswapped.length).equals(input.subarray(unswapped.length)))
    assert.deepEqual(calls, ['nobody'])
  })
  it('reads the token as Phoenix does: 1.0.0 objects, extra elements, escaped keys, a repeated key', async () => {
    const swap = async (t: string) => (t === 'stand-in' ? 'real' : undefined)
    const v1 = JSON.stringify({
      topic: 'realtime:room',
      event: 'phx_join',
      payload: { access_token: 'stand-in' },
      ref: '1',
      join_ref: '1',
    })
    const six = JSON.stringify(['1', '1', 'realtime:room', 'phx_join', { access_token: 'stand-in' }, 'extra'])
    const escaped = '["1","1","realtime:room","phx_join",{"\\u0061ccess_token":"stand-in"}]'
    // JSON.parse keeps the last of a repeated key; Realtime's decoder may keep the first: what leaves
    // holds only the one read here.
    const repeated = '["1","1","realtime:room","phx_join",{"access_token":"stand-in","access_token":"anon"}]'
    const out = frames(await through([v1, six, escaped, repeated].map(maskedTextFrame), swap)).map((f) =>
      JSON.parse(f.text),
    )
    assert.equal(out[0].payload.access_token, 'real')
    assert.equal(out[1][4].access_token, 'real')
    assert.equal(out[2][4].access_token, 'real')
    assert.deepEqual(out[3][4], { access_token: 'anon' })
    assert.ok(!frames(await through([maskedTextFrame(repeated)], swap))[0]!.text.includes('stand-in'))
  })
})
