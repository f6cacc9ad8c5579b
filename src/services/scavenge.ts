import { collector } from '../core/collector.ts'

/**
 * Bytes relayed between two young-generation collections. 4 MiB, not 8: fewer dead buffers waiting
 * means less external memory, and V8 then starts marking the old generation less often; a 10 MB
 * download ran a third as many full collections and less CPU a MB (D262).
 */
export const SCAVENGE_EVERY_BYTES = 4 * 1024 * 1024

/** How long relaying stops before what it left since the last collection is collected. */
export const QUIET_MS = 1000

/** The least a stop leaves to be worth a collection. */
export const QUIET_SCAVENGE_BYTES = 1024 * 1024

/** Bytes relayed since the last collection. */
let since = 0
/** Bytes relayed since the quiet timer last looked. */
let moved = 0
let quiet: NodeJS.Timeout | undefined

/**
 * Counts the bytes of a service body relayed (either way) and asks for a young-generation
 * collection every 4 MiB. Every socket read and every request-body chunk is a fresh 64 KiB buffer
 * outside V8's heap; relayed at once, each is garbage a moment later, but nothing on the heap grows
 * fast enough to start a collection, so V8 lets them pile up until about 64 MiB of them force a full
 * one: a 100 MB transfer peaked at +12 to +47 MiB of RSS. A young-generation collection (about a
 * millisecond: few objects are alive in it) frees the dead buffers' memory, so a transfer of any
 * size holds about 4 MiB of them.
 *
 * When relaying stops, up to 4 MiB of them would wait for the next collection, which an idle
 * process does not make: once no byte has been relayed for a second, and at least 1 MiB waits,
 * they are collected too. The timer is armed once per stretch of relaying and looks once a second
 * while it lasts, not per chunk.
 */
export function relayed(bytes: number): void {
  since += bytes
  moved += bytes
  if (since >= SCAVENGE_EVERY_BYTES) {
    since = 0
    collector()?.({ type: 'minor' })
    return
  }
  if (quiet === undefined && since >= QUIET_SCAVENGE_BYTES) {
    moved = 0
    quiet = setTimeout(lookQuiet, QUIET_MS).unref()
  }
}

function lookQuiet(): void {
  if (moved > 0) {
    moved = 0
    quiet!.refresh()
    return
  }
  quiet = undefined
  if (since < QUIET_SCAVENGE_BYTES) return
  since = 0
  collector()?.({ type: 'minor' })
}
