import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { reservePort } from '../../../scripts/supabase-auth/port.ts'

const PORT_MODULE = fileURLToPath(new URL('../../../scripts/supabase-auth/port.ts', import.meta.url))

describe('reservePort', () => {
  it('holds the port until release, then frees it', async () => {
    const reservation = await reservePort()
    const other = createServer()
    const taken = await new Promise<string>((resolve) => {
      other.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'))
      other.listen(reservation.port, '127.0.0.1', () => resolve('listening'))
    })
    assert.equal(taken, 'EADDRINUSE')
    await reservation.release()
    await new Promise<void>((resolve, reject) => {
      other.once('error', reject)
      other.listen(reservation.port, '127.0.0.1', () => resolve())
    })
    await new Promise<void>((resolve) => other.close(() => resolve()))
  })

  it('does not keep a process alive when a failing suite never releases it', () => {
    // A process that reserves a port and forgets it must still exit on its own.
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { reservePort } = await import(${JSON.stringify(PORT_MODULE)}); const r = await reservePort(); console.log(r.port)`,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    )
    assert.equal(child.error, undefined, 'the process did not exit within 30 s')
    assert.equal(child.status, 0, child.stderr)
    assert.match(child.stdout, /^\d+\n$/)
  })
})
