import { errorCodes } from 'fastify'

const { FST_ERR_CTP_BODY_TOO_LARGE, FST_ERR_CTP_INVALID_CONTENT_LENGTH } = errorCodes

/** The first buffer of a body that does not come whole in its first chunk: room for this much at least. */
const FIRST_ROOM = 16 * 1024

/**
 * A request body's bytes, read into one buffer that grows as they come: what Fastify's `parseAs:
 * 'buffer'` reader gives (the same errors for a body over `limit` or shorter than its
 * Content-Length, the same 400 for a stream error), but Fastify's keeps every chunk as it came
 * until the end and joins them then. A client that sends its body a byte per TCP segment makes
 * each of them a Buffer object of its own, some 370 bytes of memory per byte sent (20 connections
 * trickling 100 KB each held 790 MB); here a body holds at most twice what has come (and at least
 * FIRST_ROOM, never more than its Content-Length or `limit`), each byte copied about twice at
 * most. A body that comes whole in its first chunk, the usual case, is copied once, as before.
 */
export function readBodyBytes(
  payload: NodeJS.ReadableStream,
  contentLength: string | undefined,
  limit: number,
  done: (err: Error | null, body: Buffer | undefined) => void,
): void {
  const declared = Number(contentLength)
  if (declared > limit) {
    done(new FST_ERR_CTP_BODY_TOO_LARGE(), undefined)
    return
  }
  // The most the body can be: its Content-Length, or the limit when it is chunked.
  const most = Number.isNaN(declared) ? limit : declared
  let body: Buffer | undefined
  let received = 0

  const onData = (chunk: Buffer) => {
    const length = received + chunk.length
    if (length > limit) {
      stop()
      done(new FST_ERR_CTP_BODY_TOO_LARGE(), undefined)
      return
    }
    if (body === undefined) {
      body = Buffer.allocUnsafe(length >= most ? length : Math.min(most, Math.max(2 * length, FIRST_ROOM)))
    } else if (length > body.length) {
      const grown = Buffer.allocUnsafe(Math.max(length, Math.min(most, 2 * body.length)))
      body.copy(grown, 0, 0, received)
      body = grown
    }
    chunk.copy(body, received)
    received = length
  }
  const onEnd = (err?: Error & { statusCode?: number }) => {
    stop()
    if (err != null) {
      if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400
      done(err, undefined)
      return
    }
    if (!Number.isNaN(declared) && received !== declared) {
      done(new FST_ERR_CTP_INVALID_CONTENT_LENGTH(), undefined)
      return
    }
    if (body === undefined) done(null, Buffer.alloc(0))
    else done(null, received === body.length ? body : body.subarray(0, received))
  }
  const stop = () => {
    payload.removeListener('data', onData)
    payload.removeListener('end', onEnd)
    payload.removeListener('error', onEnd)
  }
  payload.on('data', onData)
  payload.on('end', onEnd)
  payload.on('error', onEnd)
  payload.resume()
}
