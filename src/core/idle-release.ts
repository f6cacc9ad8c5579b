import { performance, type EventLoopUtilization } from 'node:perf_hooks'
import { getHeapSpaceStatistics } from 'node:v8'
import { collector, type Collect } from './collector.ts'

/** How often the process looks whether a load is over. */
export const IDLE_CHECK_MS = 5_000
/**
 * Checks in a row that must find the loop idle: 45 s, so that the memory is back a minute after a
 * load ends whatever the checks' phase (the collection comes 45–50 s after the last busy moment).
 * The reducing collection also drops V8's compiled code, so a process whose load only pauses (the
 * bench's interleaved rounds, a quiet half-minute) must not pay a warm-up again after each pause.
 */
export const IDLE_CHECKS = 9
/** Below this share of the last check's time spent running, the process is idle. */
export const IDLE_UTILIZATION = 0.02
/** A young generation above this size (V8 starts it at 1–2 MiB) was grown by a load. */
export const GROWN_NEW_SPACE_BYTES = 4 * 1024 * 1024

export interface IdleReleaseSources {
  /** The event loop's utilization since the previous reading (`performance.eventLoopUtilization`). */
  utilization(): number
  /** The young generation's size now. */
  newSpaceBytes(): number
  collect: Collect | undefined
}

function newSpaceBytes(): number {
  for (const s of getHeapSpaceStatistics()) if (s.space_name === 'new_space') return s.space_size
  return 0
}

function utilizationSince(): () => number {
  let last: EventLoopUtilization = performance.eventLoopUtilization()
  return () => {
    const now = performance.eventLoopUtilization()
    const used = performance.eventLoopUtilization(now, last).utilization
    last = now
    return used
  }
}

/**
 * Memory given back once a load is over (docs/decisions.md, D145). Under load V8 grows the young
 * generation to its largest (32 MiB of semi-spaces at Node.js's defaults) and keeps it, and the pages
 * a collection frees stay pooled in the process: RSS after a load stayed 60–70 MiB above idle for as
 * long as the process lived. When a check finds the event loop idle, and a check since the last
 * collection found the young generation grown (V8's memory reducer may have shrunk it since, leaving
 * the pooled pages where they were: D161), one memory-reducing full collection shrinks the young
 * generation and returns the pooled pages (a few tens of milliseconds, at a moment nothing is
 * waiting). Only after 45 s of idleness: that collection drops V8's compiled code too, and a process
 * whose load had only paused (for 10 s in D145's first form) measured twice the CPU per request
 * while it warmed up again; 45 s is past any such pause and leaves the collection done within a
 * minute of the load's end. Once per load: the young generation is small again after it.
 */
export class IdleRelease {
  readonly #sources: IdleReleaseSources
  #timer: NodeJS.Timeout | undefined
  /** Collections made, for the tests and the metrics. */
  released = 0
  #idleChecks = 0
  /**
   * A look found the young generation grown since the last collection here. Remembered: once a load
   * is over, V8's own memory reducer may shrink the young generation before the 45 s are up, and
   * the pages the load grew stay pooled in the process all the same.
   */
  #grown = false

  constructor(sources?: Partial<IdleReleaseSources>) {
    this.#sources = {
      utilization: sources?.utilization ?? utilizationSince(),
      newSpaceBytes: sources?.newSpaceBytes ?? newSpaceBytes,
      collect: sources && 'collect' in sources ? sources.collect : collector(),
    }
  }

  start(everyMs = IDLE_CHECK_MS): void {
    if (this.#timer !== undefined || this.#sources.collect === undefined) return
    this.#timer = setInterval(() => this.check(), everyMs).unref()
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
  }

  /**
   * One look: collects when the loop was idle at this look and the IDLE_CHECKS - 1 before it, and a
   * look since the last collection found the young generation grown.
   */
  check(): boolean {
    this.#idleChecks = this.#sources.utilization() < IDLE_UTILIZATION ? this.#idleChecks + 1 : 0
    this.#grown ||= this.#sources.newSpaceBytes() > GROWN_NEW_SPACE_BYTES
    if (this.#idleChecks < IDLE_CHECKS || !this.#grown) return false
    this.#sources.collect?.({ type: 'major', flavor: 'last-resort' })
    this.#grown = false
    this.released++
    return true
  }
}
