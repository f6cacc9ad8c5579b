import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { measureStreaming } from '../bench/services-stream.ts'

const MiB = 2 ** 20

/**
 * The standalone service relays 100 MiB up and 100 MiB down without holding them
 * (bench/services-stream.ts measures the service's own process; docs/services.md has the figures).
 * A relay that held a body would grow by its 100 MiB; the bound is less than 20 MB of growth,
 * peak and settled. The 64 KiB buffers each socket read leaves behind are collected every 8 MiB
 * relayed (src/services/scavenge.ts): without that, the peak was +12 to +47 MiB.
 */
test(
  '100 MiB each way through the service: memory stays flat',
  { timeout: 180_000, skip: existsSync('/proc/self/status') ? false : 'reads VmRSS from /proc' },
  async () => {
    const f = await measureStreaming(100 * MiB)
    const mib = (b: number) => (b / MiB).toFixed(1)
    process.stdout.write(
      `# baseline ${mib(f.baselineBytes)} MiB, peak +${mib(f.uploadPeakBytes - f.baselineBytes)} MiB up, +${mib(f.downloadPeakBytes - f.baselineBytes)} MiB down, settled +${mib(f.settledBytes - f.baselineBytes)} MiB\n`,
    )
    assert.ok(f.uploadPeakBytes - f.baselineBytes < 20 * MiB, 'the upload was not held')
    assert.ok(f.downloadPeakBytes - f.baselineBytes < 20 * MiB, 'the download was not held')
    assert.ok(f.settledBytes - f.baselineBytes < 20 * MiB, 'nothing of either stays')
  },
)
