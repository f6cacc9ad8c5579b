import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib'
import { HELD_ANSWER_LIMIT, readableBody, readHeldAnswer, UnreadableAnswerError } from '../../src/core/held-answer.ts'

const TEXT = Buffer.from('{"access_token":"a","refresh_token":"r"}')

describe('readableBody', () => {
  for (const [coding, encode] of [
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['GZIP', gzipSync],
    ['deflate', deflateSync],
    ['deflate', deflateRawSync],
    ['br', (b: Buffer) => brotliCompressSync(b)],
    ['identity', (b: Buffer) => b],
  ] as const) {
    it(`undoes ${coding}`, () => assert.deepEqual(readableBody(coding, encode(TEXT)), TEXT))
  }

  it('a list of codings is undone last first (RFC 9110 §8.4)', () => {
    assert.deepEqual(readableBody('gzip, br', brotliCompressSync(gzipSync(TEXT))), TEXT)
  })

  it('no coding: the bytes as they came', () => assert.equal(readableBody(undefined, TEXT), TEXT))

  for (const [name, coding, bytes] of [
    ['an unknown coding', 'x-private', TEXT],
    ['bytes that are not what the coding says', 'gzip', TEXT],
    ['brotli that is not brotli', 'br', Buffer.from([0xff, 0xff, 0xff])],
    ['a body that unfolds past the limit', 'gzip', gzipSync(Buffer.alloc(HELD_ANSWER_LIMIT + 1))],
  ] as const) {
    it(`refuses ${name}`, () => {
      assert.throws(
        () => readableBody(coding, bytes),
        (err: unknown) => err instanceof UnreadableAnswerError && err.encoding === coding,
      )
    })
  }
})

describe('readHeldAnswer', () => {
  it('decodes the body and drops every Content-Encoding line, the other headers kept in order', () => {
    const out = readHeldAnswer({
      status: 200,
      headers: ['Content-Type', 'application/json', 'Content-Encoding', 'gzip', 'Vary', 'Accept-Encoding'],
      body: gzipSync(TEXT),
    })
    assert.deepEqual(out, {
      status: 200,
      headers: ['Content-Type', 'application/json', 'Vary', 'Accept-Encoding'],
      body: TEXT,
    })
  })

  it('two Content-Encoding lines are one list', () => {
    const out = readHeldAnswer({
      status: 201,
      headers: ['content-encoding', 'gzip', 'content-encoding', 'br'],
      body: brotliCompressSync(gzipSync(TEXT)),
    })
    assert.deepEqual(out.body, TEXT)
  })

  it('an answer without a coding is the same object', () => {
    const answer = { status: 200, headers: ['content-type', 'application/json'], body: TEXT }
    assert.equal(readHeldAnswer(answer), answer)
  })
})
