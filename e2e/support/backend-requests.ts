import { setTimeout as sleep } from 'node:timers/promises'

export interface LoggedRequest {
  method: string
  path: string
  status: number
}

/**
 * The requests Supabase Auth itself logged ("request completed", needs GOTRUE_LOG_LEVEL=info):
 * the backend's own account of what reached it.
 */
export function loggedRequests(logs: string): LoggedRequest[] {
  const requests: LoggedRequest[] = []
  for (const line of logs.split('\n')) {
    if (!line.startsWith('{')) continue
    let entry: Record<string, unknown>
    try {
      entry = JSON.parse(line) as Record<string, unknown>
    } catch {
      continue
    }
    if (entry.msg !== 'request completed') continue
    requests.push({ method: String(entry.method), path: String(entry.path), status: Number(entry.status) })
  }
  return requests
}

/**
 * Resolves once the backend has logged one more request matching `marker` than it had before
 * `send` ran. Used as a barrier: requests that reached the backend earlier are logged by then.
 */
export async function afterBackendLogged(
  logs: () => string,
  marker: (request: LoggedRequest) => boolean,
  send: () => Promise<void>,
  timeoutMs = 5_000,
): Promise<void> {
  const before = loggedRequests(logs()).filter(marker).length
  await send()
  const deadline = Date.now() + timeoutMs
  while (loggedRequests(logs()).filter(marker).length <= before) {
    if (Date.now() > deadline) throw new Error('the backend never logged the barrier request')
    await sleep(20)
  }
}
