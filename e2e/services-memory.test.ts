import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { measureStreaming } from '../bench/services-stream.ts'

const MiB = 2 ** 20

/**
 * The standalone service relays 100 MiB up and 100 MiB down without holding them
 * (bench/services-stream.ts measures; docs/services.md has the figures). A relay that held a body
 * would grow by its 100 MiB: the peak is held under 80. V8 frees the sockets' 64 KiB read buffers
 * in batches (a collection is forced once about 64 MiB of them are garbage), so the peak varies from
 * run to run (7 to 42 MiB on the 2-core machine); what stays once the transfers are over is held to
 * the 20 MiB the issue asks for. Among the end-to-end files, as a measurement of a whole process: a
 * second test file running beside it moves the collector's timing enough to fail the last bound.
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
    assert.ok(f.uploadPeakBytes - f.baselineBytes < 80 * MiB, 'the upload was not held')
    assert.ok(f.downloadPeakBytes - f.baselineBytes < 80 * MiB, 'the download was not held')
    assert.ok(f.settledBytes - f.baselineBytes < 20 * MiB, 'nothing of either stays')
  },
)
