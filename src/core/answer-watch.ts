import type { IncomingMessage } from 'node:http'
import { kWatcher } from './raw-request.ts'

/** What a watcher learns of Supabase Auth's answer: its status and its `x-sb-error-code`, if any. */
export type AnswerWatcher = (status: number, errorCode: string | undefined) => void

type Watched = IncomingMessage & { [kWatcher]?: AnswerWatcher }

/**
 * Asks to be told how the backend answered this request (the per-account limit charges a sign-in
 * only once Supabase Auth has refused it). Told at most once, when the answer's head arrives; never
 * when no answer came (backend unreachable, client gone first).
 */
export function watchAnswer(req: IncomingMessage, watcher: AnswerWatcher): void {
  ;(req as Watched)[kWatcher] = watcher
}

/** Called by the relay with the backend's status and relayed headers (flat name, value pairs). */
export function reportAnswer(req: IncomingMessage, status: number, flatHeaders: readonly string[]): void {
  const watcher = (req as Watched)[kWatcher]
  if (watcher === undefined) return
  ;(req as Watched)[kWatcher] = undefined
  let code: string | undefined
  for (let i = 0; i < flatHeaders.length; i += 2)
    if (flatHeaders[i]!.toLowerCase() === 'x-sb-error-code') code = flatHeaders[i + 1]
  watcher(status, code)
}

/**
 * Whether an answer to a password sign-in means Supabase Auth checked a password and found it
 * wrong: 400 `invalid_credentials` (or `invalid_grant`, the older name; a 400 with no code at all
 * from a backend too old to send one). Every other answer (a success, `email_not_confirmed`
 * (which follows a correct password), a ban, a validation error, its own 429, a 5xx) checked no
 * password or found it right.
 */
export function refusedCredentials(status: number, errorCode: string | undefined): boolean {
  if (status !== 400) return false
  return errorCode === undefined || errorCode === 'invalid_credentials' || errorCode === 'invalid_grant'
}
