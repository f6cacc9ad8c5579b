/**
 * Supabase Auth killed and restarted under constant load: while it is gone every request gets the
 * gateway's 502 (or 504) in its own error shape, fast; readiness stays 200 and reports the backend
 * down (docs/decisions.md, D24); once it is back, requests succeed again without restarting authgate.
 * The window and the counts are reported (RELIABILITY.md).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { startStack } from './support/stack.ts'
import { backendUnavailableReason, startSupabaseAuth, type SupabaseAuthServer } from './support/supabase-auth.ts'

const skip = await backendUnavailableReason()

interface Sample {
  at: number
  status: number
  ms: number
  errorCode: string | undefined
}

describe('chaos: Supabase Auth killed and restarted under load', { skip, timeout: 180_000 }, () => {
  it('502 in our shape while it is gone, readiness stays up, recovery without a restart', async (t) => {
    const stack = await startStack({ database: 'authgate_e2e_chaos', label: 'chaos' })
    let backend: SupabaseAuthServer = stack.backend
    const agent = new Agent({ connections: 8 })
    t.after(async () => {
      await agent.close()
      await stack.app.close().catch(() => undefined)
      await backend.stop()
    })

    const samples: Sample[] = []
    let zero = performance.now()
    let running = true
    const load = (async () => {
      while (running) {
        const start = performance.now()
        const res = await request(`${stack.url}${stack.prefix}/health`, { dispatcher: agent })
        const text = await res.body.text()
        let errorCode: string | undefined
        try {
          errorCode = (JSON.parse(text) as { error_code?: string }).error_code
        } catch {
          errorCode = undefined
        }
        samples.push({ at: start - zero, status: res.statusCode, ms: performance.now() - start, errorCode })
        await sleep(10)
      }
    })()

    await sleep(1000)
    const port = backend.port
    zero = performance.now()
    await backend.stop()
    await sleep(3000)
    const readyz = await request(`${stack.url}/readyz`, { dispatcher: agent })
    assert.equal(readyz.statusCode, 200, 'readiness does not follow the backend')
    assert.equal(((await readyz.body.json()) as { backend: string }).backend, 'down')
    const restartAt = performance.now() - zero
    backend = await startSupabaseAuth({
      publicUrl: stack.publicUrl,
      port,
      database: 'authgate_e2e_chaos',
      freshDatabase: false,
    })
    const upAt = performance.now() - zero
    await sleep(2000)
    running = false
    await load

    const failed = samples.filter((s) => s.status !== 200)
    const unexpected = failed.filter(
      (s) =>
        !(s.status === 502 && s.errorCode === 'backend_unreachable') &&
        !(s.status === 504 && s.errorCode === 'request_timeout'),
    )
    assert.deepEqual(unexpected, [], 'only the gateway’s own 502/504 while the backend is gone')
    assert.ok(failed.length > 0, 'the outage was seen')
    assert.ok(
      failed.every((s) => s.at >= -50 && s.at <= upAt + 50),
      'failures only while the backend was down',
    )
    const after = samples.filter((s) => s.at > upAt + 500)
    assert.ok(after.length > 0 && after.every((s) => s.status === 200), 'every request succeeds once it is back')
    const slowestFailure = Math.max(...failed.map((s) => s.ms))
    t.diagnostic(
      `Supabase Auth killed at 0 ms, restarted at +${restartAt.toFixed(0)} ms, answering at +${upAt.toFixed(0)} ms; ` +
        `${samples.length} requests, ${failed.length} failed (${failed.filter((s) => s.status === 502).length} × 502 backend_unreachable, ` +
        `${failed.filter((s) => s.status === 504).length} × 504), from +${Math.min(...failed.map((s) => s.at)).toFixed(0)} ms to +${Math.max(...failed.map((s) => s.at)).toFixed(0)} ms; ` +
        `slowest failed answer ${slowestFailure.toFixed(0)} ms; first success after the restart at +${Math.min(...samples.filter((s) => s.at > restartAt && s.status === 200).map((s) => s.at)).toFixed(0)} ms`,
    )
  })
})
