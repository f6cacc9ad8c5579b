import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * V8's collector, for the few places authgate asks for a collection itself (src/services/scavenge.ts,
 * src/core/idle-release.ts). `type: 'minor'` collects the young generation; `type: 'major'` with
 * `flavor: 'last-resort'` is V8's memory-reducing full collection, the one that also gives the
 * pages it keeps pooled back to the system.
 */
export type Collect = (options: { type: 'minor' | 'major'; flavor?: 'regular' | 'last-resort' }) => void

let collect: Collect | undefined | null = null

/**
 * The collector's entry point, taken once: `--expose-gc` is on only while a fresh context is made
 * (the function lives on in that context), so no other context of the host process gains a `gc`.
 * Undefined where V8 refuses the flag.
 */
export function collector(): Collect | undefined {
  if (collect !== null) return collect
  try {
    setFlagsFromString('--expose-gc')
    collect = runInNewContext('gc') as Collect
  } catch {
    collect = undefined
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
  return collect
}
