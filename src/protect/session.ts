import type { BackendFetch, BackendResponse, SupabaseAuthClient } from '../core/backend.ts'
import type { AuthUser } from './claims.ts'

export interface SessionCheckOptions {
  /** The connection to Supabase Auth; `GET <backend>/user` is asked, with its `apikey`. */
  backend: SupabaseAuthClient
  /** How long an answer is reused for the same session (default 10 s): the window in which a signed-out token still passes. */
  ttlMs?: number
  /** Most sessions remembered at once (default 10 000; the oldest are forgotten first). */
  maxEntries?: number
  /** Longest wait for the backend (default 5 s). */
  timeoutMs?: number
  /** In place of the backend connection's own (tests count and delay calls with it). */
  fetch?: BackendFetch
}

export type SessionState = { alive: true } | { alive: false; reason: string }

/** The backend could not say whether the session is alive; the request is refused (502/504), never let through. */
export class SessionCheckUnavailableError extends Error {
  readonly timeout: boolean
  constructor(message: string, timeout: boolean, cause?: unknown) {
    super(message, { cause })
    this.name = 'SessionCheckUnavailableError'
    this.timeout = timeout
  }
}

interface Entry {
  state: SessionState
  until: number
}

/**
 * Whether a token's session still exists, asked of Supabase Auth (`GET /user` with the token: it
 * answers 403 `session_not_found` once the session is signed out) and remembered per session for
 * a short time, so a busy user costs one backend call per `ttlMs`, not one per request.
 */
export class SessionChecker {
  readonly #url: URL
  readonly #ttlMs: number
  readonly #max: number
  readonly #timeoutMs: number
  readonly #fetch: BackendFetch
  readonly #cache = new Map<string, Entry>()
  readonly #pending = new Map<string, Promise<SessionState>>()
  /** Backend calls made (for tests and the benchmark). */
  calls = 0

  constructor(options: SessionCheckOptions) {
    this.#url = options.backend.resolve('/user')
    this.#ttlMs = options.ttlMs ?? 10_000
    this.#max = options.maxEntries ?? 10_000
    this.#timeoutMs = options.timeoutMs ?? 5_000
    this.#fetch = options.fetch ?? options.backend.fetch
  }

  async check(user: AuthUser): Promise<SessionState> {
    // Tokens without a session (service keys) are checked one by one.
    const key = user.session_id ?? user.token
    const now = performance.now()
    const hit = this.#cache.get(key)
    if (hit && hit.until > now) return hit.state
    const pending = this.#pending.get(key)
    if (pending) return pending
    const promise = this.#ask(user.token).finally(() => this.#pending.delete(key))
    this.#pending.set(key, promise)
    const state = await promise
    this.#cache.delete(key)
    if (this.#cache.size >= this.#max) this.#cache.delete(this.#cache.keys().next().value!)
    this.#cache.set(key, { state, until: performance.now() + this.#ttlMs })
    return state
  }

  async #ask(token: string): Promise<SessionState> {
    this.calls++
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' }
    let response: BackendResponse
    try {
      response = await this.#fetch(this.#url, { headers, signal: AbortSignal.timeout(this.#timeoutMs) })
    } catch (err) {
      const timeout = err instanceof Error && err.name === 'TimeoutError'
      throw new SessionCheckUnavailableError(`session check failed: ${(err as Error).message}`, timeout, err)
    }
    const text = await response.text().catch(() => '')
    if (response.status === 200) return { alive: true }
    if (response.status === 401 || response.status === 403 || response.status === 404) {
      let code = 'session_not_found'
      try {
        const body = JSON.parse(text) as { error_code?: unknown; code?: unknown }
        if (typeof body.error_code === 'string') code = body.error_code
        else if (typeof body.code === 'string') code = body.code
      } catch {
        // keep the default
      }
      return { alive: false, reason: code }
    }
    throw new SessionCheckUnavailableError(`session check: the backend answered ${response.status}`, false)
  }
}
