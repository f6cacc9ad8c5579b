// A child process of `npm run dev` and how it is stopped.
import { spawn } from 'node:child_process'
import type { ChildProcess, SpawnOptions } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'

export interface Service {
  name: string
  child: ChildProcess
  /** Settles when the process has exited, with how it ended. */
  exited: Promise<string>
  /** Sends `signal`, then SIGKILL when it is still running after `graceMs`. */
  stop(signal: NodeJS.Signals, graceMs: number): Promise<void>
}

/**
 * Starts a process in a process group of its own. A terminal's Ctrl-C then reaches only the
 * stack's own process, which stops the services one by one with a single signal each: authgate
 * first, so that it finishes the requests in flight while Supabase Auth still answers them (it
 * takes a second signal as "exit now"). Should the stack's process exit without stopping them,
 * they are killed on its way out. (`detached: false` keeps a short-lived step in the group, so
 * Ctrl-C ends it at once.)
 */
export function startService(name: string, command: string, args: string[], options: SpawnOptions): Service {
  const child = spawn(command, args, { detached: true, ...options })
  const killHard = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  process.once('exit', killHard)
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      process.removeListener('exit', killHard)
      resolve(signal === null ? `exit code ${code}` : `signal ${signal}`)
    })
    child.once('error', (error) => {
      process.removeListener('exit', killHard)
      resolve(`could not start: ${error.message}`)
    })
  })
  const running = (): boolean => child.exitCode === null && child.signalCode === null && child.pid !== undefined
  let stopping: Promise<void> | undefined
  const stop = (signal: NodeJS.Signals, graceMs: number): Promise<void> =>
    (stopping ??= (async () => {
      if (!running()) return
      child.kill(signal)
      const graceful = await Promise.race([exited.then(() => true), sleep(graceMs, false, { ref: false })])
      if (!graceful && running()) {
        child.kill('SIGKILL')
        await exited
      }
    })())
  return { name, child, exited, stop }
}

/** Resolves once `check` returns true; rejects when the service exits first or the time runs out. */
export async function waitUntil(
  service: Service,
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  output: () => string = () => '',
): Promise<void> {
  let ended: string | undefined
  void service.exited.then((how) => (ended = how))
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (ended !== undefined) throw new Error(`${service.name} stopped (${ended}) before ${what}${tail(output())}`)
    if (await check().catch(() => false)) return
    await sleep(200)
  }
  throw new Error(`${service.name}: no ${what} within ${Math.round(timeoutMs / 1000)} s${tail(output())}`)
}

function tail(text: string): string {
  const lines = text.trimEnd().split('\n').slice(-20).join('\n')
  return lines === '' ? '' : `; its last output:\n${lines}`
}

/** GET url answers `status` (the body is discarded). */
export async function answers(url: string, status = 200): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(3_000) })
  await response.body?.cancel()
  return response.status === status
}
