import { errorCodes } from 'fastify'

const { FST_ERR_CTP_BODY_TOO_LARGE, FST_ERR_CTP_INVALID_CONTENT_LENGTH } = errorCodes

/** A chunk this large is kept as it came; smaller ones are copied together. */
const KEEP_AS_IS = 4096
/** The most small chunks are gathered into before a new buffer is begun for the next. */
const GATHER_MOST = 16 * 1024

/**
 * A request body's bytes: what Fastify's `parseAs: 'buffer'` reader gives (the same errors for a
 * body over `limit` or shorter than its Content-Length, the same 400 for a stream error), but
 * Fastify's keeps every chunk as it came until the end. A client that sends its body a byte per
 * TCP segment makes each a Buffer object of its own, some 370 bytes of memory per byte sent (20
 * connections trickling 100 KB each held 790 MB). Here chunks of 4 KiB or more are kept as they
 * came (an object's overhead is then under 3 %), and smaller ones are copied into a buffer that
 * grows with them to at most 16 KiB, cut to what it holds when the next is begun: what a body holds
 * is what has come, plus the unused part of the one buffer being filled, never more than it holds.
 * Nothing is held before a byte comes.
 * A body that comes whole in one chunk, the usual case, is copied once, as before.
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
  const parts: Buffer[] = []
  let received = 0
  /** The buffer small chunks are copied into, and how much of it they fill. */
  let gather: Buffer | undefined
  let gathered = 0

  const closeGather = () => {
    if (gather === undefined) return
    // Cut to what it holds, so that a body held long holds no unused room.
    if (gathered === gather.length) parts.push(gather)
    else {
      const exact = Buffer.allocUnsafeSlow(gathered)
      gather.copy(exact, 0, 0, gathered)
      parts.push(exact)
    }
    gather = undefined
    gathered = 0
  }
  const onData = (chunk: Buffer) => {
    received += chunk.length
    if (received > limit) {
      stop()
      done(new FST_ERR_CTP_BODY_TOO_LARGE(), undefined)
      return
    }
    if (chunk.length >= KEEP_AS_IS) {
      closeGather()
      parts.push(chunk)
      return
    }
    if (gather !== undefined && gathered + chunk.length > gather.length) {
      if (gathered + chunk.length > GATHER_MOST) closeGather()
      else {
        // Twice what it holds, so that what is unused is never more than what is held.
        const grown = Buffer.allocUnsafeSlow(Math.min(GATHER_MOST, Math.max(2 * gathered, gathered + chunk.length)))
        gather.copy(grown, 0, 0, gathered)
        gather = grown
      }
    }
    // Outside Node.js's shared pool unless this chunk ends the body: a slice of the pool keeps its
    // whole slab (64 KiB) alive for as long as a body that stops short is held.
    gather ??= received === declared ? Buffer.allocUnsafe(chunk.length) : Buffer.allocUnsafeSlow(chunk.length)
    chunk.copy(gather, gathered)
    gathered += chunk.length
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
    // A body gathered whole from small chunks is that buffer; anything else is joined once, a copy
    // of its own (never a view of a socket's read).
    if (parts.length === 0 && gather !== undefined) {
      done(null, gathered === gather.length ? gather : gather.subarray(0, gathered))
      return
    }
    closeGather()
    done(null, Buffer.concat(parts, received))
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
