import type { FastifyBaseLogger } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import type { BackendResponse, RequestIdentity, SupabaseAuthClient } from '../core/backend.ts'
import { UnreadableAnswerError } from '../core/held-answer.ts'
import { AuthgateError } from '../errors.ts'
import { splitSessionAnswer, type SessionTokens } from './answer.ts'
import type { SessionConfig } from './config.ts'
import { clearedCookie, sessionCookie } from './cookie.ts'
import { newSessionId, SessionCipher, sessionHandle } from './crypto.ts'
import { StandIns } from './stand-ins.ts'
import type { SessionStore } from './store.ts'

/** What is kept of one session, encrypted in the store. */
export interface StoredSession extends SessionTokens {
  /** When the session was created here (ms). */
  createdAt: number
  /** When it ends whatever its use: created + lifetime (ms). */
  endsAt: number
  /** When the current access token was stored (ms): its lifetime decides how early it is refreshed. */
  storedAt: number
  /**
   * When Supabase Auth last confirmed the session (ms): its sign-in, a refresh or `GET /user`.
   * Absent in records written before it was kept: `storedAt` stands for it.
   */
  checkedAt?: number
}

/** A session found by its cookie. */
export interface ActiveSession {
  id: string
  handle: string
  session: StoredSession
}

/** Who a refresh is made for: carried to Supabase Auth like a forwarded request's. */
export type RequestContext = Required<RequestIdentity>

/**
 * The session's lock outlives the backend's timeout by this much, so no replica takes it while the
 * refresh it guards may still be answered; the holder renews it while its work is in flight.
 */
const LOCK_MARGIN_MS = 5_000
/** How often a replica waiting for another's refresh looks at the record. */
const POLL_MS = 50
/** A session in use has its idle deadline pushed back at most this often per process. */
const TOUCH_EVERY_MS = 60_000

export interface CookieSessionsOptions {
  config: SessionConfig
  store: SessionStore
  backend: SupabaseAuthClient
  log: FastifyBaseLogger
  now?: () => number
  /** How often a held lock is renewed (default a third of its time to live; tests shorten it). */
  lockRenewMs?: number
}

/** What a use of the session relies on it for. */
export interface UseOptions {
  /**
   * Nothing else asks Supabase Auth about the session on this request (the application's routes,
   * `GET /session`): past AUTHGATE_SESSION_REVALIDATE since its last confirmation, authgate asks.
   */
  revalidate?: boolean
}

/**
 * Cookie sessions: created from session answers, found by the cookie's id, their access token
 * refreshed before it expires — once per session however many requests ask at the same moment
 * (one promise per session in this process, a lock in the store across replicas), so Supabase
 * Auth never sees a refresh token used twice by authgate.
 */
export class CookieSessions {
  readonly config: SessionConfig
  readonly store: SessionStore
  /** The stand-ins session answers carry in place of the tokens (src/sessions/stand-ins.ts). */
  readonly standIns: StandIns
  readonly #cipher: SessionCipher
  readonly #backend: SupabaseAuthClient
  readonly #log: FastifyBaseLogger
  readonly #now: () => number
  readonly #lockMs: number
  readonly #lockRenewMs: number
  readonly #inflight = new Map<string, Promise<ActiveSession | undefined>>()
  readonly #checks = new Map<string, Promise<ActiveSession | undefined>>()
  readonly #touched = new Map<string, number>()
  /** Refresh requests this process sent to Supabase Auth (tests, metrics). */
  refreshes = 0
  /** `GET /user` requests this process sent to confirm a session (tests, metrics). */
  revalidations = 0

  constructor(options: CookieSessionsOptions) {
    this.config = options.config
    this.store = options.store
    this.#cipher = new SessionCipher(options.config.keys)
    this.standIns = new StandIns(options.config.keys)
    this.#backend = options.backend
    this.#log = options.log
    this.#now = options.now ?? (() => Date.now())
    this.#lockMs = options.backend.options.timeoutMs + LOCK_MARGIN_MS
    this.#lockRenewMs = options.lockRenewMs ?? Math.floor(this.#lockMs / 3)
  }

  /** The clock sessions are timed by (ms). */
  now(): number {
    return this.#now()
  }

  /** How long the session's lock is taken for (and renewed for while held). */
  get lockMs(): number {
    return this.#lockMs
  }

  /** The `Set-Cookie` value for a session. */
  cookie(active: Pick<ActiveSession, 'id' | 'session'>): string {
    return sessionCookie(
      { name: this.config.cookieName, secure: this.config.secure },
      active.id,
      Math.round((active.session.endsAt - this.#now()) / 1000),
    )
  }

  /** The `Set-Cookie` value that removes the cookie. */
  clearedCookie(): string {
    return clearedCookie({ name: this.config.cookieName, secure: this.config.secure })
  }

  /** Stores a new session for the tokens of a session answer. */
  async create(tokens: SessionTokens): Promise<ActiveSession> {
    const now = this.#now()
    const id = newSessionId()
    const handle = sessionHandle(id)
    const session: StoredSession = {
      ...tokens,
      createdAt: now,
      endsAt: now + this.config.lifetimeMs,
      storedAt: now,
      checkedAt: now,
    }
    await this.#write(handle, session)
    return { id, handle, session }
  }

  /** The session of a cookie id, as stored (undefined when unknown, ended, or unreadable). */
  async load(id: string): Promise<ActiveSession | undefined> {
    const handle = sessionHandle(id)
    const session = await this.#read(handle)
    return session === undefined ? undefined : { id, handle, session }
  }

  /**
   * The session of a cookie id with an access token good for a while: refreshed first when it
   * expires soon; with `revalidate`, confirmed by Supabase Auth first when it has not been for
   * longer than AUTHGATE_SESSION_REVALIDATE. Undefined when the session is unknown or Supabase Auth
   * ended it.
   */
  async use(id: string, context: RequestContext, options: UseOptions = {}): Promise<ActiveSession | undefined> {
    const active = await this.load(id)
    if (active === undefined) return undefined
    if (this.#due(active.session)) {
      const changed = (s: StoredSession) => s.refreshToken !== active.session.refreshToken
      return this.#once(this.#inflight, active, () =>
        this.#underLock(active, changed, (current) => this.#exchange(current, context)),
      )
    }
    if (options.revalidate === true && this.#unconfirmed(active.session)) {
      // Settled once the record changed hands (a refresh) or another replica confirmed it.
      const settled = (s: StoredSession) => s.refreshToken !== active.session.refreshToken || !this.#unconfirmed(s)
      return this.#once(this.#checks, active, () =>
        this.#underLock(active, settled, (current) => this.#confirm(current, context)),
      )
    }
    const last = this.#touched.get(active.handle)
    const now = this.#now()
    if (last === undefined || now - last >= TOUCH_EVERY_MS) {
      this.#touched.delete(active.handle)
      if (this.#touched.size >= 10_000) this.#touched.delete(this.#touched.keys().next().value!)
      this.#touched.set(active.handle, now)
      await this.#guard(() => this.store.touch(active.handle, this.#ttl(active.session)))
    }
    return active
  }

  /**
   * The page's refresh (its refresh stand-in): the session's tokens refreshed at Supabase Auth now,
   * whether due or not, as a refresh-token grant would — once however many ask at the same moment,
   * under the lock, and not again when another request refreshed them meanwhile. Undefined when the
   * session is unknown or Supabase Auth ended it.
   */
  async renew(id: string, context: RequestContext): Promise<ActiveSession | undefined> {
    const active = await this.load(id)
    if (active === undefined) return undefined
    const changed = (s: StoredSession) => s.refreshToken !== active.session.refreshToken
    return this.#once(this.#inflight, active, () =>
      this.#underLock(active, changed, (current) => this.#exchange(current, context)),
    )
  }

  /** The user of an access token (`GET /user`), or null when Supabase Auth does not answer it. */
  async userOf(accessToken: string, context?: RequestContext): Promise<unknown> {
    try {
      const response = await this.#backend.fetch(this.#backend.resolve('/user'), {
        headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
        identity: context,
        signal: AbortSignal.timeout(this.#backend.options.timeoutMs),
      })
      if (response.status !== 200) {
        await response.body?.cancel()
        return null
      }
      return (await response.json()) as unknown
    } catch (err) {
      this.#log.warn({ err }, 'cookie session: the user of a new session could not be read')
      return null
    }
  }

  /** Forgets a session here (Supabase Auth is not asked: sign-out goes through `/logout`). */
  async end(handle: string): Promise<void> {
    this.#touched.delete(handle)
    await this.#guard(() => this.store.delete(handle))
  }

  /** One promise per session in this process for a piece of work on it, however many requests ask. */
  #once(
    inflight: Map<string, Promise<ActiveSession | undefined>>,
    active: ActiveSession,
    work: () => Promise<ActiveSession | undefined>,
  ): Promise<ActiveSession | undefined> {
    let pending = inflight.get(active.handle)
    if (pending === undefined) {
      pending = work().finally(() => inflight.delete(active.handle))
      inflight.set(active.handle, pending)
    }
    return pending
  }

  /** Not confirmed by Supabase Auth for longer than AUTHGATE_SESSION_REVALIDATE. */
  #unconfirmed(session: StoredSession): boolean {
    return this.#now() - (session.checkedAt ?? session.storedAt) >= this.config.revalidateMs
  }

  /** Due for a refresh: less than a quarter of the token's life (at most 30 s) left. */
  #due(session: StoredSession): boolean {
    const expiresAtMs = session.expiresAt * 1000
    const margin = Math.min(30_000, Math.max(0, (expiresAtMs - session.storedAt) / 4))
    return this.#now() >= expiresAtMs - margin
  }

  #ttl(session: StoredSession): number {
    return Math.min(this.config.idleTimeoutMs, session.endsAt - this.#now())
  }

  async #write(handle: string, session: StoredSession): Promise<void> {
    const ttl = this.#ttl(session)
    if (ttl <= 0) return this.end(handle)
    const sealed = this.#cipher.seal(JSON.stringify(session), handle)
    await this.#guard(() => this.store.set(handle, sealed, ttl))
  }

  async #read(handle: string): Promise<StoredSession | undefined> {
    const sealed = await this.#guard(() => this.store.get(handle))
    if (sealed === undefined) return undefined
    const plain = this.#cipher.open(sealed, handle)
    if (plain === undefined) {
      // A key taken out of AUTHGATE_SESSION_KEYS, or a record not written by authgate.
      this.#log.warn('cookie session: a stored session cannot be decrypted with the configured keys; it is dropped')
      await this.end(handle)
      return undefined
    }
    const session = JSON.parse(plain) as StoredSession
    if (session.endsAt <= this.#now()) {
      await this.end(handle)
      return undefined
    }
    // Sealed with an older key: sealed again with the current one, so the old key can be retired.
    if (!this.#cipher.isCurrent(sealed)) await this.#write(handle, session)
    return session
  }

  /** Runs a store call; its failure is a 503 in our shape, with a log line. */
  async #guard<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call()
    } catch (err) {
      this.#log.error({ err }, 'cookie session: the session store failed')
      throw new AuthgateError('session_store_unavailable', undefined, { cause: err })
    }
  }

  /**
   * Work that rewrites the session's record (a refresh, a confirmation), under the session's lock,
   * so that no replica writes back tokens another has just replaced. A replica that finds the lock
   * taken waits for the record to be `settled` instead of doing the work itself; the holder looks
   * at the record again once it has the lock, since another replica may have done the work between
   * its read and its lock. The lock is taken for longer than the backend's timeout and renewed
   * while the work is in flight: it never lapses under a refresh that Supabase Auth answers late.
   */
  async #underLock(
    stale: ActiveSession,
    settled: (current: StoredSession) => boolean,
    work: (current: ActiveSession) => Promise<ActiveSession | undefined>,
  ): Promise<ActiveSession | undefined> {
    const lockMs = this.#lockMs
    const deadline = this.#now() + lockMs + this.#backend.options.timeoutMs
    for (;;) {
      const token = await this.#guard(() => this.store.lock(stale.handle, lockMs))
      if (token !== undefined) {
        const renewal = setInterval(() => this.#renew(stale.handle, token, lockMs), this.#lockRenewMs)
        renewal.unref()
        try {
          const current = await this.#read(stale.handle)
          if (current === undefined) return undefined
          if (settled(current)) return { ...stale, session: current }
          return await work({ ...stale, session: current })
        } finally {
          clearInterval(renewal)
          await this.store.unlock(stale.handle, token).catch(() => undefined)
        }
      }
      await sleep(POLL_MS)
      const current = await this.#read(stale.handle)
      if (current === undefined) return undefined
      if (settled(current)) return { ...stale, session: current }
      if (this.#now() > deadline) throw new AuthgateError('request_timeout')
    }
  }

  #renew(handle: string, token: string, lockMs: number): void {
    this.store.renew(handle, token, lockMs).then(
      (held) => {
        if (!held) this.#log.warn('cookie session: the session lock expired while its refresh was in flight')
      },
      (err: unknown) => this.#log.warn({ err }, 'cookie session: the session lock could not be renewed'),
    )
  }

  /**
   * Asks Supabase Auth whether the session still exists (`GET /user` with its access token, which
   * answers 403 `session_not_found` once it was signed out anywhere): confirmed and the user kept
   * up to date, or ended here.
   */
  async #confirm(active: ActiveSession, context: RequestContext): Promise<ActiveSession | undefined> {
    this.revalidations++
    const headers = { authorization: `Bearer ${active.session.accessToken}`, accept: 'application/json' }
    const { response, body } = await this.#call(
      '/user',
      { headers, identity: context },
      'the session could not be confirmed',
    )
    if (response.status === 200) {
      let user = active.session.user
      try {
        user = JSON.parse(body.toString('utf8')) as unknown
      } catch {
        // The user as stored.
      }
      const session: StoredSession = { ...active.session, user, checkedAt: this.#now() }
      await this.#write(active.handle, session)
      return { ...active, session }
    }
    if (response.status === 401 || response.status === 403 || response.status === 404) {
      this.#log.info(
        { status: response.status, code: errorCodeOf(body) },
        'cookie session: Supabase Auth no longer knows the session; it is forgotten',
      )
      await this.end(active.handle)
      return undefined
    }
    this.#log.warn({ status: response.status }, 'cookie session: Supabase Auth did not confirm the session')
    throw new AuthgateError(response.status === 429 ? 'over_request_rate_limit' : 'backend_unreachable')
  }

  /** One request to Supabase Auth with its timeout; unreachable or late is an error in our terms. */
  async #call(
    path: string,
    init: { method?: string; headers: Record<string, string>; body?: string; identity?: RequestContext },
    failure: string,
  ): Promise<{ response: BackendResponse; body: Buffer }> {
    try {
      const response = await this.#backend.fetch(this.#backend.resolve(path), {
        ...init,
        signal: AbortSignal.timeout(this.#backend.options.timeoutMs),
      })
      return { response, body: Buffer.from(await response.arrayBuffer()) }
    } catch (err) {
      const timeout = err instanceof Error && err.name === 'TimeoutError'
      this.#log.error({ err }, `cookie session: ${failure}: Supabase Auth could not be reached`)
      throw new AuthgateError(timeout ? 'request_timeout' : 'backend_unreachable', undefined, { cause: err })
    }
  }

  /** The refresh itself: `POST /token?grant_type=refresh_token`, its answer stored in place of the old one. */
  async #exchange(active: ActiveSession, context: RequestContext): Promise<ActiveSession | undefined> {
    this.refreshes++
    let response: BackendResponse
    let body: Buffer
    try {
      response = await this.#backend.fetch(this.#backend.resolve('/token?grant_type=refresh_token'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        identity: context,
        body: JSON.stringify({ refresh_token: active.session.refreshToken }),
        signal: AbortSignal.timeout(this.#backend.options.timeoutMs),
      })
      body = Buffer.from(await response.arrayBuffer())
    } catch (err) {
      if (err instanceof UnreadableAnswerError) {
        // Fails closed, as a held answer does: nothing of the refresh is kept.
        this.#log.error({ encoding: err.encoding, reason: err.message }, 'backend answer could not be read')
        throw new AuthgateError('backend_unreadable', undefined, { cause: err })
      }
      const timeout = err instanceof Error && err.name === 'TimeoutError'
      this.#log.error({ err }, 'cookie session: the refresh could not reach Supabase Auth')
      throw new AuthgateError(timeout ? 'request_timeout' : 'backend_unreachable', undefined, { cause: err })
    }
    if (response.status === 200) {
      const split = splitSessionAnswer(body, this.#now())
      if (split === undefined) {
        this.#log.error('cookie session: Supabase Auth answered a refresh without tokens')
        throw new AuthgateError('unexpected_failure')
      }
      const now = this.#now()
      const session: StoredSession = { ...active.session, ...split.tokens, storedAt: now, checkedAt: now }
      await this.#write(active.handle, session)
      return { ...active, session }
    }
    if (response.status >= 400 && response.status < 500 && response.status !== 429) {
      // The refresh token is revoked, used up or its session ended (signed out elsewhere, timed out).
      this.#log.info(
        { status: response.status, code: errorCodeOf(body) },
        'cookie session: Supabase Auth ended the session; it is forgotten',
      )
      await this.end(active.handle)
      return undefined
    }
    this.#log.warn({ status: response.status }, 'cookie session: Supabase Auth did not refresh the session')
    throw new AuthgateError(response.status === 429 ? 'over_request_rate_limit' : 'backend_unreachable')
  }
}

/** The error code of a Supabase Auth error body (`error_code`, or `code` in the 2024 shape). */
export function errorCodeOf(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { error_code?: unknown; code?: unknown }
    const code = parsed.error_code ?? parsed.code
    return typeof code === 'string' ? code : undefined
  } catch {
    return undefined
  }
}
