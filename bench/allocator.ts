/**
 * The memory allocator authgate runs with in the container image (Dockerfile; docs/decisions.md,
 * D146, D180, D276): jemalloc preloaded, with its background thread returning freed pages to the
 * system within a second of their freeing, and glibc's two arenas for the case it is not loaded.
 * The bench and the soak start authgate the same way, so that their memory figures are the image's.
 */
import { existsSync } from 'node:fs'

/** Where Debian's libjemalloc2 puts the library (amd64, arm64), and where the image links it. */
const CANDIDATES = [
  '/usr/local/lib/libjemalloc.so.2',
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
]

export const JEMALLOC = CANDIDATES.find((path) => existsSync(path))

/** The environment the image sets for the allocator; without jemalloc on this machine, glibc's part only. */
export function imageAllocatorEnv(): Record<string, string> {
  return {
    MALLOC_ARENA_MAX: '2',
    ...(JEMALLOC === undefined
      ? {}
      : { LD_PRELOAD: JEMALLOC, MALLOC_CONF: 'background_thread:true,dirty_decay_ms:1000' }),
  }
}

/** How the allocator is described in a report's heading. */
export const allocatorLabel =
  JEMALLOC === undefined
    ? 'glibc malloc with MALLOC_ARENA_MAX=2 (jemalloc not installed: not as the image runs)'
    : 'jemalloc (MALLOC_CONF=background_thread:true,dirty_decay_ms:1000)'
