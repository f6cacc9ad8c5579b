import { headSize, payloadLength } from '../core/frame-head.ts'

/**
 * Where the WebSocket frames of a relayed byte stream begin and end (RFC 6455 §5.2), read from
 * their heads only: the payloads are never copied or unmasked. The relay needs it for one thing,
 * writing its own close frame (1001, going away) when authgate stops, which must fall between two
 * of the upstream's frames, never inside one.
 */
export class FrameCursor {
  /** Payload bytes of the current frame still to come. */
  #payloadLeft = 0
  /** The head read so far of a frame whose head is split across chunks. */
  #head: number[] = []

  /** True between two frames. */
  get atBoundary(): boolean {
    return this.#payloadLeft === 0 && this.#head.length === 0
  }

  /**
   * Reads a chunk and returns how many of its bytes were read: all of them, or with `stop`, those up
   * to the first frame boundary (0 when the stream is between frames already).
   */
  read(chunk: Uint8Array, stop = false): number {
    if (stop || this.#head.length > 0) return this.#readByFrame(chunk, stop)
    // Every chunk but the rare one that begins inside a head: the current payload's rest skipped,
    // then frame after frame by its head alone, with the chunk's own bytes read in this loop.
    const end = chunk.length
    let at = this.#payloadLeft
    while (at < end) {
      if (end - at < 2) break
      let b1 = chunk[at + 1]!
      // Realtime's usual frame: a server's, unmasked, its length in its second byte (under 126).
      // A run of them is skipped by their 2-byte heads alone, the position a small integer (the
      // chunk's length is checked to keep it one: a socket's chunks are 64 KiB at most).
      if (b1 < 126 && end < 0x7fff_0000) {
        let p = at | 0
        do {
          p = (p + 2 + b1) | 0
          if (end - p < 2) break
          b1 = chunk[p + 1]!
        } while (b1 < 126)
        at = p
        continue
      }
      const short = b1 & 0x7f
      const size = 2 + (short < 126 ? 0 : short === 126 ? 2 : 8) + ((b1 & 0x80) !== 0 ? 4 : 0)
      if (end - at < size) break
      at += size + (short < 126 ? short : payloadLength(chunk, at))
    }
    if (at >= end) {
      this.#payloadLeft = at - end
      return end
    }
    // A head cut by the chunk's end: its bytes kept until the next chunk completes it.
    this.#payloadLeft = 0
    while (at < end) this.#head.push(chunk[at++]!)
    return end
  }

  /** Frame by frame, as `read`, stopping at the first boundary with `stop`; a head split across chunks gathered byte by byte. */
  #readByFrame(chunk: Uint8Array, stop: boolean): number {
    let at = 0
    const end = chunk.length
    while (at < end) {
      if (stop && this.atBoundary) return at
      if (this.#payloadLeft > 0) {
        const take = Math.min(this.#payloadLeft, end - at)
        this.#payloadLeft -= take
        at += take
        continue
      }
      // A head whole in the chunk is read where it lies; one split across chunks is gathered byte by byte.
      const size = this.#head.length === 0 ? headSize(chunk, at, end) : 0
      if (size > 0) {
        this.#payloadLeft = payloadLength(chunk, at)
        at += size
        continue
      }
      this.#head.push(chunk[at]!)
      at++
      this.#headDone()
    }
    return at
  }

  /** The payload length once the head is whole. */
  #headDone(): void {
    const head = this.#head
    if (headSize(head, 0, head.length) === 0) return
    this.#head = []
    this.#payloadLeft = payloadLength(head, 0)
  }
}

/** A server's close frame (unmasked) with a status code and a short reason (RFC 6455 §5.5.1: 123 bytes at most). */
export function closeFrame(code: number, reason = ''): Buffer {
  const text = Buffer.from(reason).subarray(0, 123)
  return Buffer.concat([Buffer.from([0x88, 2 + text.length, code >> 8, code & 0xff]), text])
}

/** 1001: the endpoint is going away (a server shutting down). */
export const GOING_AWAY = 1001

/** 1008: a message broke the endpoint's policy (a stand-in token that cannot be swapped). */
export const POLICY_VIOLATION = 1008
