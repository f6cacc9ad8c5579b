import { collector } from '../core/collector.ts'

/** Bytes relayed between two young-generation collections. */
export const SCAVENGE_EVERY_BYTES = 8 * 1024 * 1024

let since = 0

/**
 * Counts the bytes of a service body relayed (either way) and asks for a young-generation
 * collection every 8 MiB. Every socket read and every request-body chunk is a fresh 64 KiB buffer
 * outside V8's heap; relayed at once, each is garbage a moment later, but nothing on the heap grows
 * fast enough to start a collection, so V8 lets them pile up until about 64 MiB of them force a full
 * one: a 100 MB transfer peaked at +12 to +47 MiB of RSS. A young-generation collection (about a
 * millisecond: few objects are alive in it) frees the dead buffers' memory, so a transfer of any
 * size holds about 8 MiB of them.
 */
export function relayed(bytes: number): void {
  since += bytes
  if (since < SCAVENGE_EVERY_BYTES) return
  since = 0
  collector()?.({ type: 'minor' })
}
