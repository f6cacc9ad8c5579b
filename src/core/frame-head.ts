/** The head of a WebSocket frame (RFC 6455 §5.2), read where it lies: by the socket relay and the stand-in swap. */

/**
 * The size of the frame head at `at` (2 bytes, the extended length, the mask), or 0 while the
 * bytes before `end` do not hold all of it.
 */
export function headSize(data: ArrayLike<number>, at: number, end: number): number {
  if (end - at < 2) return 0
  const b1 = data[at + 1]!
  const short = b1 & 0x7f
  const size = 2 + (short === 126 ? 2 : short === 127 ? 8 : 0) + ((b1 & 0x80) !== 0 ? 4 : 0)
  return end - at >= size ? size : 0
}

/** The payload length the whole head at `at` declares. */
export function payloadLength(data: ArrayLike<number>, at: number): number {
  const short = data[at + 1]! & 0x7f
  if (short < 126) return short
  // 2^53 is far beyond any frame a socket carries; the 8-byte length is read as a double.
  let length = 0
  for (let i = at + 2; i < at + (short === 126 ? 4 : 10); i++) length = length * 256 + data[i]!
  return length
}
