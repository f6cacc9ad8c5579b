import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'

/** The service entry point; AUTHGATE_E2E_MAIN runs another one (e.g. the built dist/main.js). */
const MAIN = process.env.AUTHGATE_E2E_MAIN ?? fileURLToPath(new URL('../../src/main.ts', import.meta.url))

export interface GatewayProcess {
  /** http://127.0.0.1:<port> */
  url: string
  logs(): string
  stop(): Promise<void>
}

/**
 * The standalone service (`node src/main.ts`) configured only through its environment, the way an
 * operator runs it. Resolves once GET <prefix>/settings answers through it.
 */
export async function startGatewayProcess(options: {
  port: number
  backendUrl: string
  prefix?: string
  env?: Record<string, string>
  startupTimeoutMs?: number
}): Promise<GatewayProcess> {
  const prefix = options.prefix ?? '/auth'
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(options.port),
      HOST: '127.0.0.1',
      AUTHGATE_BACKEND_URL: options.backendUrl,
      AUTHGATE_PREFIX: prefix,
      AUTHGATE_LOG_LEVEL: 'warn',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  const killOnExit = (): void => {
    child.kill('SIGKILL')
  }
  process.once('exit', killOnExit)

  const stop = async (): Promise<void> => {
    process.removeListener('exit', killOnExit)
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGTERM')
    const graceful = await Promise.race([exited.then(() => true), sleep(5_000, false, { ref: false })])
    if (!graceful) {
      child.kill('SIGKILL')
      await exited
    }
  }

  const url = `http://127.0.0.1:${options.port}`
  const deadline = Date.now() + (options.startupTimeoutMs ?? 60_000)
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`authgate exited (${child.exitCode}) during start:\n${output}`)
    try {
      const response = await fetch(`${url}${prefix}/settings`, { signal: AbortSignal.timeout(2_000) })
      await response.body?.cancel()
      if (response.status === 200) return { url, logs: () => output, stop }
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  await stop()
  throw new Error(`authgate did not answer within the start-up time:\n${output}`)
}
