import { collector } from '../../src/core/collector.ts'

const pause = () => new Promise((resolve) => setTimeout(resolve, 100))

/**
 * The bytes the process holds, heap and array buffers, once what is dead is freed: after a full
 * collection V8's sweeper frees dead buffers' memory on a thread of its own, so it is read after a
 * second collection and a pause, when nothing more of it is left to free.
 */
export async function heldMemory(): Promise<number> {
  collector()!({ type: 'major' })
  await pause()
  collector()!({ type: 'major' })
  await pause()
  const { heapUsed, arrayBuffers } = process.memoryUsage()
  return heapUsed + arrayBuffers
}
