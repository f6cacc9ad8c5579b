import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync, type ZlibOptions } from 'node:zlib'

/** A whole backend answer, as a rewrite sees it: status, relayed header pairs (flat), body. */
export interface HeldAnswer {
  status: number
  headers: string[]
  body: Buffer
}

/**
 * Most bytes of an answer authgate holds to read or rewrite, before and after decoding (a session
 * answer is a few KiB): a small compressed body cannot unfold into gigabytes here.
 */
export const HELD_ANSWER_LIMIT = 1024 * 1024

/**
 * What authgate asks for when it will read the answer itself. A backend (or a proxy in front of
 * it) may compress anyway: `readableBody` decodes what comes.
 */
export const READ_ENCODING = 'identity'

/** An answer whose content coding authgate cannot undo: never relayed as if it had been read. */
export class UnreadableAnswerError extends Error {
  readonly encoding: string
  constructor(encoding: string, reason: string, options?: ErrorOptions) {
    super(`backend answer in content coding "${encoding}" could not be read: ${reason}`, options)
    this.name = 'UnreadableAnswerError'
    this.encoding = encoding
  }
}

const LIMITED: ZlibOptions = { maxOutputLength: HELD_ANSWER_LIMIT }

function inflateEither(body: Buffer): Buffer {
  // RFC 9110 §8.4.1.2 says zlib-wrapped; some servers send raw deflate, which browsers accept too.
  try {
    return inflateSync(body, LIMITED)
  } catch {
    return inflateRawSync(body, LIMITED)
  }
}

const DECODERS: Record<string, (body: Buffer) => Buffer> = {
  gzip: (b) => gunzipSync(b, LIMITED),
  'x-gzip': (b) => gunzipSync(b, LIMITED),
  deflate: inflateEither,
  br: (b) => brotliDecompressSync(b, LIMITED),
}

/**
 * The body as the backend meant it, its `Content-Encoding` (one value, or a list applied in order)
 * undone. The one reader of backend answers authgate reads itself: the held answers of cookie
 * sessions and route mends, and the whole answers of `SupabaseAuthClient.fetch`.
 * Throws `UnreadableAnswerError` for a coding it does not know or bytes that do not decode.
 */
export function readableBody(contentEncoding: string | undefined, body: Buffer): Buffer {
  if (contentEncoding === undefined) return body
  const codings = contentEncoding
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity')
  let out = body
  for (const coding of codings.reverse()) {
    const decode = DECODERS[coding]
    if (decode === undefined) throw new UnreadableAnswerError(contentEncoding, 'unknown content coding')
    try {
      out = decode(out)
    } catch (err) {
      throw new UnreadableAnswerError(contentEncoding, (err as Error).message, { cause: err })
    }
  }
  return out
}

/**
 * A held answer with its body decoded and its `Content-Encoding` gone, so what reads or rewrites it
 * sees the backend's JSON and the page gets the bytes that were read.
 */
export function readHeldAnswer(answer: HeldAnswer): HeldAnswer {
  let encoding: string | undefined
  const headers: string[] = []
  for (let i = 0; i < answer.headers.length; i += 2) {
    if (answer.headers[i]!.toLowerCase() === 'content-encoding') {
      const value = answer.headers[i + 1]!
      encoding = encoding === undefined ? value : `${encoding}, ${value}`
    } else headers.push(answer.headers[i]!, answer.headers[i + 1]!)
  }
  if (encoding === undefined) return answer
  return { status: answer.status, headers, body: readableBody(encoding, answer.body) }
}

/** The value of a held answer's header (the first of that name), lower-case `name`. */
export function heldHeader(answer: HeldAnswer, name: string): string | undefined {
  for (let i = 0; i < answer.headers.length; i += 2)
    if (answer.headers[i]!.toLowerCase() === name) return answer.headers[i + 1]
  return undefined
}

/**
 * The JSON object of a held answer, when it is one; undefined for a body still content-encoded
 * (the relay decodes with `readHeldAnswer` first, so only an answer that skipped it).
 */
export function heldJson(answer: HeldAnswer): Record<string, unknown> | undefined {
  if (heldHeader(answer, 'content-encoding') !== undefined) return undefined
  if (!/^application\/json\b/i.test(heldHeader(answer, 'content-type') ?? '')) return undefined
  try {
    const value: unknown = JSON.parse(answer.body.toString('utf8'))
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}
