/**
 * The bench's meter of a Node.js peer, loaded into every Node.js peer with `--import` (authgate,
 * its cluster workers, which inherit the flag, the floors, the baseline): on SIGUSR2 it starts
 * counting, on the next SIGUSR2 it stops and writes what the process spent in between to
 * `<BENCH_METER_DIR>/<pid>.json`:
 *
 * - `heapAllocated`: bytes the V8 heap allocated. Node.js has no allocation counter
 *   (`v8.getHeapStatistics()` has no `total_allocated_bytes`), so it is summed from the heap's used
 *   size around each garbage collection, as `v8.GCProfiler` reports it: what grew between two
 *   collections was allocated. Exact for the heap, whatever else runs on the machine.
 * - `cpuUserUs`, `cpuSystemUs`: `process.cpuUsage()` over the same span.
 *
 * - `memory`: `process.memoryUsage()` at the end (RSS, heap, external, arrayBuffers), for reading
 *   what an RSS after load is made of.
 *
 * Buffers' memory outside the heap (sockets' reads, pooled slabs) is not in `heapAllocated`.
 * Without BENCH_METER_DIR it does nothing.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { GCProfiler, getHeapStatistics } from 'node:v8'

const dir = process.env['BENCH_METER_DIR']

interface GcStatistics {
  beforeGC: { heapStatistics: { usedHeapSize: number } }
  afterGC: { heapStatistics: { usedHeapSize: number } }
}

if (dir !== undefined && dir !== '') {
  let profiler: GCProfiler | undefined
  let startUsed = 0
  let startCpu = process.cpuUsage()
  process.on('SIGUSR2', () => {
    const file = join(dir, `${process.pid}.json`)
    if (profiler === undefined) {
      profiler = new GCProfiler()
      profiler.start()
      startCpu = process.cpuUsage()
      startUsed = getHeapStatistics().used_heap_size
      writeFileSync(file, JSON.stringify({ counting: true }))
      return
    }
    const cpu = process.cpuUsage(startCpu)
    const endUsed = getHeapStatistics().used_heap_size
    const result = profiler.stop() as unknown as { statistics: GcStatistics[] } | undefined
    profiler = undefined
    let allocated = 0
    let after = startUsed
    for (const s of result?.statistics ?? []) {
      allocated += Math.max(0, s.beforeGC.heapStatistics.usedHeapSize - after)
      after = s.afterGC.heapStatistics.usedHeapSize
    }
    allocated += Math.max(0, endUsed - after)
    writeFileSync(
      file,
      JSON.stringify({
        counting: false,
        heapAllocated: allocated,
        collections: result?.statistics.length ?? 0,
        cpuUserUs: cpu.user,
        cpuSystemUs: cpu.system,
        // Where the process's memory is at the end: the heap, Buffers' memory, the rest is malloc'd.
        memory: process.memoryUsage(),
      }),
    )
  })
}
