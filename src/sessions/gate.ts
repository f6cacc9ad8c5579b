import type { FastifyReply, FastifyRequest } from 'fastify'
import type { HeldAnswer } from '../core/held-answer.ts'
import { traceEvent } from '../core/trace-event.ts'
import { AuthgateError, sendError, type ErrorCode } from '../errors.ts'
import { backendQuery } from '../core/go-values.ts'
import { clientIp } from '../proxy/client-ip.ts'
import type { AnswerRewrite } from '../proxy/relay.ts'
import { splitSessionAnswer, splitSessionRedirect } from './answer.ts'
import { SESSION_MODE_HEADER } from './config.ts'
import { sessionIdFrom } from './cookie.ts'
import { sessionHandle } from './crypto.ts'
import {
  crossSiteGetReason,
  crossSiteReason,
  isSameOriginNavigation,
  isUnsafeMethod,
  standInGetReason,
} from './csrf.ts'
import { errorCodeOf, type ActiveSession, type CookieSessions, type RequestContext } from './manager.ts'

/** What a request gets from its cookie: the session, or an answer already sent (refused). */
export type CookieAuth = { session: ActiveSession } | { answered: FastifyReply } | undefined

/** What a request relies on the cookie for. */
export interface CookieUse {
  /** The route table's `cookieGuard` of a mounted route (src/auth/routes/entry.ts). */
  guard?: SessionRouteTraits['cookieGuard']
  /**
   * Nothing else asks Supabase Auth about the session on this request: confirmed first when
   * AUTHGATE_SESSION_REVALIDATE has passed (the application's routes; a mounted route's own answer
   * says whether the session still exists).
   */
  revalidate: boolean
}

/** Supabase Auth's answers to a bearer whose session or user no longer exists (its `requireAuthentication`). */
const ENDED_CODES = new Set(['session_not_found', 'user_not_found'])

/** What the gate reads of a mounted route (src/auth/routes/entry.ts describes the fields). */
export interface SessionRouteTraits {
  /** The route needs the user's bearer: the cookie's session gives it. */
  bearer?: boolean | undefined
  /** The route's answer starts a session, or its request ends one. */
  session?: 'issue' | 'signOut' | undefined
  /** What the route needs besides the cookie to take it (a cross-site check, consent, PKCE). */
  cookieGuard?: 'sideEffect' | 'consent' | 'pkce' | undefined
  /** The route's path under the prefix (`/token` takes the page's refresh stand-in). */
  path?: string
}

/** What the forwarder adds for a mounted route: the bearer of the cookie's session, an answer rewrite. */
export interface ForwardAdditions {
  headers?: Record<string, string>
  rewrite?: AnswerRewrite
}

/** HTML escaping as Go's `http.Redirect` writes the location into its body. */
const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' })[c]!)

/**
 * A query parameter as Supabase Auth reads it (Go's `Query().Get`, src/core/go-values.ts): a pair
 * Go drops (a `;` in it, a bad `%` escape) is not there, however another reader would take it.
 */
const backendQueryValue = (request: FastifyRequest, name: string): string | undefined =>
  backendQuery(request.raw.url ?? '')[name]

const hasBearer = (request: FastifyRequest) => {
  const h = request.headers.authorization
  return h !== undefined && h !== ''
}

/** The token of `Authorization: Bearer <token>` (undefined for anything else). */
export const bearerOf = (header: string | string[] | undefined): string | undefined => {
  const value = Array.isArray(header) ? header[0] : header
  const m = value === undefined ? null : /^bearer\s+(\S+)\s*$/i.exec(value)
  return m === null ? undefined : m[1]
}

/** Why a stand-in was not taken: our error code and a message saying why. */
export interface StandInRefusal {
  code: ErrorCode
  message: string
  /** The cookie names an ended session: it is cleared with the answer. */
  clearCookie?: boolean
}

/** A stand-in made under a key AUTHGATE_SESSION_KEYS no longer lists (docs/sessions.md, key rotation). */
const RETIRED: StandInRefusal = {
  code: 'bad_jwt',
  message: 'The stand-in token was made under a key authgate no longer holds: sign in again',
}

/** A service request's stand-in: its real access token, the refusal, or none carried (undefined). */
export type ServiceVerdict = { accessToken: string } | { refusal: StandInRefusal } | undefined

/**
 * Where cookie sessions meet requests: the application's protected routes and the mounted routes
 * that need the user's bearer take the cookie instead; session answers of the sign-in routes are
 * stored and become the cookie; `/logout` ends the stored session too.
 */
export class SessionGate {
  readonly sessions: CookieSessions
  /** Each service request's verdict, found once (see `forService`). */
  readonly #serviceVerdicts = new WeakMap<FastifyRequest, Promise<ServiceVerdict>>()

  constructor(sessions: CookieSessions) {
    this.sessions = sessions
  }

  /** Whether the page asked (or the deployment decided) that session answers become cookies. */
  wantsCookie(request: FastifyRequest): boolean {
    if (this.sessions.config.mode === 'on') return true
    const asked = request.headers[SESSION_MODE_HEADER]
    return typeof asked === 'string' && asked.trim().toLowerCase() === 'cookie'
  }

  /**
   * The session of the request's cookie, for a request without its own bearer: checked against
   * cross-site use for unsafe methods and GETs that change something (403), refused where it would
   * trade for tokens the page could read (the route table's `consent` and `pkce` guards: 403),
   * refreshed when due, confirmed with Supabase Auth when asked and due. An ended session clears the
   * cookie and counts as none.
   */
  async authenticate(
    request: FastifyRequest,
    reply: FastifyReply,
    use: CookieUse = { revalidate: true },
  ): Promise<CookieAuth> {
    // A stand-in bearer is the cookie's session shown by supabase-js: taken as the cookie is, and
    // only with it. Any other bearer is the request's own: the cookie is not looked at.
    const standIn = this.standInOf(request.headers.authorization)
    if (standIn === undefined && hasBearer(request)) return undefined
    // Made under a key no longer configured: no session can take it, with or without the cookie.
    if (standIn !== undefined && this.sessions.standIns.isRetired(standIn))
      return this.#refuseStandIn(request, reply, RETIRED)
    const config = this.sessions.config
    const id = sessionIdFrom(request.headers.cookie, config.cookieName)
    if (id === undefined) {
      if (standIn === undefined) return undefined
      return this.#refuseStandIn(request, reply, {
        code: 'session_not_found',
        message: 'The stand-in token was sent without the session cookie it stands for',
      })
    }
    if (isUnsafeMethod(request.method) || use.guard !== undefined || standIn !== undefined) {
      const reason = isUnsafeMethod(request.method)
        ? crossSiteReason(request, config.allowedOrigins)
        : use.guard !== undefined
          ? crossSiteGetReason(request, config.allowedOrigins)
          : standInGetReason(request, config.allowedOrigins)
      if (reason !== undefined) {
        request.log.warn({ origin: request.headers.origin, reason }, 'cookie session: cross-site request refused')
        traceEvent(request, 'session.cross_site_refused', { reason })
        return { answered: sendError(request, reply, 'cross_site_request', `Forbidden: ${reason}`) }
      }
    }
    // A consent's code trades for tokens at /oauth/token, which answers them to whoever asks: page
    // script holding only the cookie would get tokens it can carry elsewhere.
    if (use.guard === 'consent' && config.oauthConsentMs === undefined)
      return this.#refuse(request, reply, 'AUTHGATE_SESSION_OAUTH_CONSENT is off')
    // A linking flow ends in a new session of the user: without PKCE in a redirect with its tokens
    // in the fragment; with PKCE in a code that POST /token exchanges, for the cookie only in `on` mode.
    if (use.guard === 'pkce') {
      if (config.mode !== 'on')
        return this.#refuse(request, reply, 'in `request` mode identity linking does not take the session cookie')
      if (!backendQueryValue(request, 'code_challenge'))
        return this.#refuse(request, reply, 'identity linking with the session cookie needs PKCE (code_challenge)')
    }
    let session: ActiveSession | undefined
    try {
      session = await this.sessions.use(id, this.#context(request), { revalidate: use.revalidate })
    } catch (err) {
      // The store or the refresh failed: answered in our shape here, on any route (the application's too).
      if (err instanceof AuthgateError) return { answered: sendError(request, reply, err) }
      throw err
    }
    if (session === undefined) {
      traceEvent(request, 'session.ended', {})
      reply.header('set-cookie', this.sessions.clearedCookie())
      if (standIn !== undefined)
        return this.#refuseStandIn(request, reply, {
          code: 'session_not_found',
          message: 'The session this stand-in token stands for has ended',
        })
      return undefined
    }
    if (standIn !== undefined) {
      const refusal = this.#standInFault(standIn, session)
      if (refusal !== undefined) return this.#refuseStandIn(request, reply, refusal)
    }
    traceEvent(request, 'session.used', {})
    if (use.guard === 'consent' && !isSameOriginNavigation(request)) {
      const age = this.sessions.now() - session.session.createdAt
      if (age > config.oauthConsentMs!)
        return this.#refuse(
          request,
          reply,
          `the session was signed in ${Math.round(age / 1000)} s ago, longer than AUTHGATE_SESSION_OAUTH_CONSENT allows, and this is not a same-origin navigation`,
        )
    }
    return { session }
  }

  /** The access stand-in an `Authorization` header carries, if it carries one. */
  standInOf(header: string | string[] | undefined): string | undefined {
    const token = bearerOf(header)
    return token !== undefined && this.sessions.standIns.isAccess(token) ? token : undefined
  }

  /** Why a stand-in does not stand for the cookie's session (undefined: it does). */
  #standInFault(token: string, active: ActiveSession): StandInRefusal | undefined {
    const fault = this.sessions.standIns.checkAccess(token, active.handle, Math.floor(this.sessions.now() / 1000))
    if (fault === undefined) return undefined
    if (fault === 'expired') return { code: 'bad_jwt', message: 'The stand-in token has expired: refresh the session' }
    if (fault === 'forged') return { code: 'bad_jwt', message: 'The stand-in token was not issued by authgate' }
    if (fault === 'retired') return RETIRED
    return { code: 'session_not_found', message: 'The stand-in token stands for another session than the cookie' }
  }

  #refuseStandIn(request: FastifyRequest, reply: FastifyReply, refusal: StandInRefusal): { answered: FastifyReply } {
    request.log.info({ code: refusal.code, reason: refusal.message }, 'cookie session: stand-in token refused')
    traceEvent(request, 'session.stand_in_refused', { code: refusal.code })
    return { answered: sendError(request, reply, refusal.code, refusal.message) }
  }

  /**
   * For a request to a service beside Auth (src/services/): the real access token for the stand-in
   * its `Authorization` carries, the refusal when the stand-in does not stand for the request's
   * cookie session, or undefined when it carries none (the request goes on as it came). The
   * session is refreshed when due and confirmed past AUTHGATE_SESSION_REVALIDATE: the services
   * verify tokens locally and never ask Supabase Auth.
   */
  forService(request: FastifyRequest, reply: FastifyReply): Promise<ServiceVerdict> {
    // Once per request: the per-user limit asks first (src/services/user-limits.ts), the proxy then.
    let verdict = this.#serviceVerdicts.get(request)
    if (verdict === undefined) {
      verdict = this.#serviceVerdict(request, reply)
      this.#serviceVerdicts.set(request, verdict)
    }
    return verdict
  }

  async #serviceVerdict(request: FastifyRequest, reply: FastifyReply): Promise<ServiceVerdict> {
    const verdict = await this.#forService(request)
    if (verdict !== undefined && 'refusal' in verdict) {
      request.log.info(
        { code: verdict.refusal.code, reason: verdict.refusal.message },
        'cookie session: stand-in token refused',
      )
      if (verdict.refusal.clearCookie === true) reply.header('set-cookie', this.sessions.clearedCookie())
    }
    return verdict
  }

  async #forService(request: FastifyRequest): Promise<ServiceVerdict> {
    const standIn = this.standInOf(request.headers.authorization)
    if (standIn === undefined) return undefined
    if (this.sessions.standIns.isRetired(standIn)) return { refusal: RETIRED }
    const config = this.sessions.config
    const id = sessionIdFrom(request.headers.cookie, config.cookieName)
    if (id === undefined)
      return {
        refusal: {
          code: 'session_not_found',
          message: 'The stand-in token was sent without the session cookie it stands for',
        },
      }
    const reason = isUnsafeMethod(request.method)
      ? crossSiteReason(request, config.allowedOrigins)
      : standInGetReason(request, config.allowedOrigins)
    if (reason !== undefined) return { refusal: { code: 'cross_site_request', message: `Forbidden: ${reason}` } }
    let active: ActiveSession | undefined
    try {
      active = await this.sessions.use(id, this.#context(request), { revalidate: true })
    } catch (err) {
      if (err instanceof AuthgateError) return { refusal: { code: err.code, message: err.message } }
      throw err
    }
    if (active === undefined)
      return {
        refusal: {
          code: 'session_not_found',
          message: 'The session this stand-in token stands for has ended',
          clearCookie: true,
        },
      }
    const refusal = this.#standInFault(standIn, active)
    return refusal === undefined ? { accessToken: active.session.accessToken } : { refusal }
  }

  /** A session answer in Supabase Auth's shape with stand-ins for the tokens (`page`: its other fields). */
  standInAnswer(active: Pick<ActiveSession, 'handle' | 'session'>, page: Record<string, unknown> = {}) {
    const { session } = active
    const standIns = this.sessions.standIns
    const now = Math.floor(this.sessions.now() / 1000)
    return {
      ...page,
      access_token: standIns.access(active.handle, session.accessToken, session.expiresAt),
      token_type: 'bearer',
      expires_in: Math.max(0, session.expiresAt - now),
      expires_at: session.expiresAt,
      refresh_token: standIns.refresh(active.handle),
      user: session.user,
    }
  }

  #refuse(request: FastifyRequest, reply: FastifyReply, reason: string): { answered: FastifyReply } {
    request.log.warn({ reason }, 'cookie session: a request that would trade the cookie for tokens refused')
    return { answered: sendError(request, reply, 'session_cookie_refused', `Forbidden: ${reason}`) }
  }

  /** For a mounted route: the cookie's bearer where the route needs one, and the rewrite of session answers. */
  async forMountedRoute(
    request: FastifyRequest,
    reply: FastifyReply,
    route: SessionRouteTraits,
  ): Promise<ForwardAdditions | { answered: FastifyReply }> {
    const refreshStandIn = route.path === '/token' ? this.#refreshStandInOf(request) : undefined
    if (refreshStandIn !== undefined) return { answered: await this.#refresh(request, reply, refreshStandIn) }
    let session: ActiveSession | undefined
    if (route.bearer) {
      const auth = await this.authenticate(request, reply, { guard: route.cookieGuard, revalidate: false })
      if (auth !== undefined && 'answered' in auth) return auth
      session = auth?.session
    }
    const out: ForwardAdditions = session ? { headers: { authorization: `Bearer ${session.session.accessToken}` } } : {}
    if (route.session === 'issue' && (session !== undefined || this.wantsCookie(request))) {
      // Login CSRF: a browser on another site must not sign the user into an account of its choosing.
      if (session === undefined && request.headers.origin !== undefined && isUnsafeMethod(request.method)) {
        const reason = crossSiteReason(request, this.sessions.config.allowedOrigins)
        if (reason !== undefined) {
          request.log.warn({ origin: request.headers.origin, reason }, 'cookie session: cross-site sign-in refused')
          return { answered: sendError(request, reply, 'cross_site_request', `Forbidden: ${reason}`) }
        }
      }
      // A sign-in over an older cookie replaces it: the old record goes too (authenticated or not).
      const older = session?.handle ?? this.#cookieHandle(request)
      out.rewrite = (answer) => this.#issue(request, reply, answer, older)
    }
    if (route.session === 'signOut' && session !== undefined) {
      out.rewrite = (answer) => this.#signOut(request, reply, answer, session)
    } else if (session !== undefined) {
      // Signed out elsewhere (another device's global sign-out, an administrator): Supabase Auth
      // says so on the forwarded request, and the session ends here at once, not at its next refresh.
      const then = out.rewrite
      out.rewrite = async (answer) => {
        await this.#endIfGone(request, reply, answer, session)
        return then === undefined ? answer : then(answer)
      }
    }
    return out
  }

  /** The refresh stand-in of a `POST /token?grant_type=refresh_token`, if it carries one. */
  #refreshStandInOf(request: FastifyRequest): string | undefined {
    if (backendQueryValue(request, 'grant_type') !== 'refresh_token') return undefined
    const token = (request.body as { refresh_token?: unknown } | undefined)?.refresh_token
    return typeof token === 'string' && this.sessions.standIns.isRefresh(token) ? token : undefined
  }

  /**
   * The page's refresh with its refresh stand-in: never forwarded (Supabase Auth would not know it);
   * authgate refreshes the real tokens it holds and answers new stand-ins, in the refresh grant's
   * shape. Only with the cookie of the session the stand-in was made for, from an allowed origin.
   */
  async #refresh(request: FastifyRequest, reply: FastifyReply, token: string): Promise<FastifyReply> {
    const config = this.sessions.config
    const id = sessionIdFrom(request.headers.cookie, config.cookieName)
    const refuse = (message: string) => {
      request.log.info({ reason: message }, 'cookie session: refresh stand-in refused')
      // Supabase Auth's answer to a refresh token it does not know: supabase-js ends its session.
      return sendError(request, reply, 'refresh_token_not_found', message)
    }
    if (id === undefined) return refuse('The refresh stand-in was sent without the session cookie it stands for')
    const reason = crossSiteReason(request, config.allowedOrigins)
    if (reason !== undefined) {
      request.log.warn({ origin: request.headers.origin, reason }, 'cookie session: cross-site request refused')
      return sendError(request, reply, 'cross_site_request', `Forbidden: ${reason}`)
    }
    if (!this.sessions.standIns.checkRefresh(token, sessionHandle(id)))
      return refuse('The refresh stand-in stands for another session than the cookie')
    let active: ActiveSession | undefined
    try {
      active = await this.sessions.renew(id, this.#context(request))
    } catch (err) {
      if (err instanceof AuthgateError) return sendError(request, reply, err)
      throw err
    }
    reply.header('cache-control', 'no-store')
    if (active === undefined) {
      reply.header('set-cookie', this.sessions.clearedCookie())
      return refuse('The session this refresh stand-in stands for has ended')
    }
    traceEvent(request, 'session.refreshed', {})
    return reply
      .code(200)
      .header('content-type', 'application/json')
      .send(Buffer.from(JSON.stringify(this.standInAnswer(active))))
  }

  /** A bearer answer that says the session or its user no longer exists: the session ends here too. */
  async #endIfGone(
    request: FastifyRequest,
    reply: FastifyReply,
    answer: HeldAnswer,
    session: ActiveSession,
  ): Promise<void> {
    if (answer.status !== 401 && answer.status !== 403 && answer.status !== 404) return
    const code = errorCodeOf(answer.body)
    if (code === undefined || !ENDED_CODES.has(code)) return
    request.log.info({ code }, 'cookie session: Supabase Auth no longer knows the session; it is forgotten')
    await this.sessions.end(session.handle)
    reply.header('set-cookie', this.sessions.clearedCookie())
  }

  /** A session answer: stored, the cookie set, the tokens taken out of the body. */
  /** Who a request authgate makes for this one is made for (client IP, request id). */
  #context(request: FastifyRequest): RequestContext {
    return { clientIp: clientIp(request), requestId: request.id }
  }

  #cookieHandle(request: FastifyRequest): string | undefined {
    const id = sessionIdFrom(request.headers.cookie, this.sessions.config.cookieName)
    return id === undefined ? undefined : sessionHandle(id)
  }

  async #issue(
    request: FastifyRequest,
    reply: FastifyReply,
    answer: HeldAnswer,
    previous: string | undefined,
  ): Promise<HeldAnswer> {
    if (answer.status >= 300 && answer.status < 400) return this.#issueRedirect(request, reply, answer, previous)
    if (answer.status !== 200) return answer
    const split = splitSessionAnswer(answer.body)
    if (split === undefined) return answer
    const created = await this.sessions.create(split.tokens)
    // A new id whenever the session changes hands or level (MFA): the old cookie no longer works.
    if (previous !== undefined) await this.sessions.end(previous)
    reply.header('set-cookie', this.sessions.cookie(created))
    reply.header('cache-control', 'no-store')
    return { ...answer, body: Buffer.from(JSON.stringify(this.standInAnswer(created, split.page))) }
  }

  /** An e-mail link's redirect with the session in the fragment: stored, the fragment without the tokens. */
  async #issueRedirect(
    request: FastifyRequest,
    reply: FastifyReply,
    answer: HeldAnswer,
    previous: string | undefined,
  ): Promise<HeldAnswer> {
    const at = answer.headers.findIndex((v, i) => i % 2 === 0 && v.toLowerCase() === 'location')
    const split = at === -1 ? undefined : splitSessionRedirect(answer.headers[at + 1]!)
    if (split === undefined) return answer
    // The fragment has no user: asked of Supabase Auth once, for `GET /session`.
    const tokens = {
      ...split.tokens,
      user: await this.sessions.userOf(split.tokens.accessToken, this.#context(request)),
    }
    const created = await this.sessions.create(tokens)
    if (previous !== undefined) await this.sessions.end(previous)
    reply.header('set-cookie', this.sessions.cookie(created))
    reply.header('cache-control', 'no-store')
    const headers = answer.headers.slice()
    const old = headers[at + 1]!
    // supabase-js reads the session from the fragment (`detectSessionInUrl`): stand-ins in place of the tokens.
    const standIns = this.standInAnswer(created)
    const hash = split.location.indexOf('#')
    const fragment = new URLSearchParams(hash === -1 ? '' : split.location.slice(hash + 1))
    fragment.set('access_token', standIns.access_token)
    fragment.set('refresh_token', standIns.refresh_token)
    const location = `${hash === -1 ? split.location : split.location.slice(0, hash)}#${fragment.toString()}`
    headers[at + 1] = location
    // The body is Supabase Auth's "See Other" link to the same location: it loses the tokens too.
    let body = answer.body.toString('utf8').replace(escapeHtml(old), escapeHtml(location))
    if (/access_token|refresh_token/.test(body.replace(escapeHtml(location), ''))) body = ''
    return { ...answer, headers, body: Buffer.from(body) }
  }

  /** `/logout` with the cookie's session: forgotten here once Supabase Auth has revoked it (or no longer knows it). */
  async #signOut(
    request: FastifyRequest,
    reply: FastifyReply,
    answer: HeldAnswer,
    session: ActiveSession,
  ): Promise<HeldAnswer> {
    const scope = (request.query as { scope?: unknown } | undefined)?.scope
    if (scope === 'others') return answer
    const revoked = answer.status >= 200 && answer.status < 300
    const gone = answer.status === 401 || answer.status === 403 || answer.status === 404
    if (!revoked && !gone) return answer
    await this.sessions.end(session.handle)
    reply.header('set-cookie', this.sessions.clearedCookie())
    return answer
  }

  /**
   * `GET <prefix>/session`: the signed-in user and when the session ends, or 401. The page believes
   * it, so the session is refreshed when due and confirmed with Supabase Auth as protected routes do.
   */
  async current(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const id = sessionIdFrom(request.headers.cookie, this.sessions.config.cookieName)
    reply.header('cache-control', 'no-store')
    let active: ActiveSession | undefined
    try {
      active = id === undefined ? undefined : await this.sessions.use(id, this.#context(request), { revalidate: true })
    } catch (err) {
      if (err instanceof AuthgateError) return sendError(request, reply, err)
      throw err
    }
    if (active === undefined) {
      if (id !== undefined) reply.header('set-cookie', this.sessions.clearedCookie())
      return sendError(request, reply, 'no_session')
    }
    const { session } = active
    const idleEnd = Date.now() + this.sessions.config.idleTimeoutMs
    const body = { user: session.user, expires_at: Math.floor(Math.min(session.endsAt, idleEnd) / 1000) }
    return reply
      .code(200)
      .header('content-type', 'application/json')
      .send(Buffer.from(JSON.stringify(body)))
  }
}
