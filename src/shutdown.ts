import type { FastifyInstance } from 'fastify'

export interface ShutdownOptions {
  /** Longest wait for requests in flight; then their connections are cut and the process exits 1. */
  timeoutMs: number
  /** Time readiness reports 503 before the listener closes (load balancers stop sending meanwhile). */
  delayMs: number
  signals?: NodeJS.Signals[]
  exit?: (code: number) => void
  /**
   * A signal this soon after the first is the same request to stop, not a second one (default 1 s):
   * Ctrl-C and systemd signal the whole process group, so npm's forwarded copy and a cluster
   * primary's arrive right behind the signal the process got itself.
   */
  repeatWindowMs?: number
}

/** Default of `repeatWindowMs`. */
export const SIGNAL_REPEAT_WINDOW_MS = 1000

/**
 * Graceful shutdown on SIGTERM/SIGINT: readiness turns false at once; after `delayMs` the listener
 * closes (no new connections; requests on open ones are still served, each answer closing its
 * connection); requests in flight finish; then the backend pool and Redis close (onClose hooks) and
 * the process exits 0. Past `timeoutMs` the remaining connections are cut and it exits 1. A second
 * signal exits at once, when it comes after a real pause (`repeatWindowMs`): copies of the first
 * that arrive with it are ignored.
 */
export function installShutdown(app: FastifyInstance, options: ShutdownOptions): () => void {
  const exit = options.exit ?? ((code: number) => process.exit(code))
  const repeatWindowMs = options.repeatWindowMs ?? SIGNAL_REPEAT_WINDOW_MS
  let firstSignalAt: number | undefined

  const onSignal = (signal: NodeJS.Signals): void => {
    if (firstSignalAt !== undefined) {
      if (performance.now() - firstSignalAt < repeatWindowMs) {
        app.log.info({ signal }, 'signal repeated (process group, npm or cluster primary): still finishing requests')
        return
      }
      app.log.warn({ signal }, 'second signal: exiting now')
      exit(1)
      return
    }
    firstSignalAt = performance.now()
    app.authgateService?.readiness.drain()
    app.log.info(
      { signal, delayMs: options.delayMs, timeoutMs: options.timeoutMs },
      'shutting down: readiness off, finishing requests in flight',
    )
    const deadline = setTimeout(() => {
      app.log.error({ timeoutMs: options.timeoutMs }, 'shutdown deadline passed: cutting the remaining connections')
      app.server.closeAllConnections()
      exit(1)
    }, options.delayMs + options.timeoutMs)
    deadline.unref()

    setTimeout(() => {
      // A keep-alive connection whose request finishes after close() began would otherwise stay
      // open until its idle timeout: close each as soon as it is idle.
      const reaper = setInterval(() => app.server.closeIdleConnections(), 100)
      reaper.unref()
      app.close().then(
        () => {
          clearInterval(reaper)
          clearTimeout(deadline)
          app.log.info('shut down')
          exit(0)
        },
        (err: unknown) => {
          app.log.error({ err }, 'error while shutting down')
          exit(1)
        },
      )
    }, options.delayMs).unref()
  }

  const signals = options.signals ?? ['SIGTERM', 'SIGINT']
  for (const s of signals) process.on(s, onSignal)
  return () => {
    for (const s of signals) process.off(s, onSignal)
  }
}
