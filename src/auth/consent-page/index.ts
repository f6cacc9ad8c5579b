import { createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AuthgateConfigError, isOff } from '../../config/env.ts'
import type { BackendResponse, SupabaseAuthClient } from '../../core/backend.ts'
import { isRecord } from '../../core/is-record.ts'
import { clientIp } from '../../proxy/client-ip.ts'
import { reportAnswer } from '../../core/answer-watch.ts'
import { rateLimitHeader, retryAfterSeconds, policyHeader } from '../../ratelimit/headers.ts'
import type { RateLimitHook, RateLimiter } from '../../ratelimit/limiter.ts'
import { BACKEND_EMAIL } from '../../validation.ts'
import { accountIdentifier } from '../../ratelimit/account-key.ts'
import { ownOrigin } from '../../sessions/csrf.ts'
import type { SessionGate } from '../../sessions/gate.ts'
import type { ClientMetadataRegistry } from '../client-metadata/registry.ts'
import { backendIssuer, withIssuer } from '../oauth-conformance.ts'
import { consentPage, messagePage, signInPage } from './html.ts'
import { TICKET_PARAM, type ConsentTickets } from './ticket.ts'
import { readBodyBytes } from '../body-reader.ts'
import { backendValues } from '../../core/go-values.ts'

/**
 * authgate's own OAuth consent page (AUTHGATE_OAUTH_CONSENT_PAGE), where Supabase Auth's
 * `/oauth/authorize` sends the browser (`GOTRUE_SITE_URL` + `GOTRUE_OAUTH_SERVER_AUTHORIZATION_PATH`):
 * the signed-in user sees the client, where it sends them back and the scopes, from the backend's
 * authorization details, and approves or denies. Who the user is: a bearer token, the session
 * cookie (where AUTHGATE_SESSION_OAUTH_CONSENT lets a consent take it, as on the consent API), or
 * the e-mail and password typed into the page, whose access token then travels only in the page's
 * own form. Every POST must come from the page's own origin; a cookie decision also carries a
 * token bound to the session and the authorization; the page cannot be framed and loads nothing.
 */

export interface ConsentPageOptions {
  /** Where the page is served (outside the prefix): the backend's consent path. */
  path: string
  backend: SupabaseAuthClient
  sessions: SessionGate | undefined
  clientMetadata: ClientMetadataRegistry | undefined
  /** The tickets of the authorizations `GET /oauth/authorize` sent to the page. */
  tickets: ConsentTickets
  /** The per-client limit of `POST /token`: the page's sign-in shares its bucket. */
  signInLimit: RateLimitHook | undefined
  /** The per-account limit of `POST /token`'s password sign-in: the page's sign-in is charged to it. */
  passwordSignIn: RateLimiter['passwordSignIn']
}

const AUTHORIZATION_ID = /^[A-Za-z0-9_-]{1,100}$/

type Credential = { token: string; via: 'bearer' | 'form' } | { token: string; via: 'cookie'; handle: string }

/**
 * The page's security headers: nothing loaded, nothing framed, nothing cached, no referrer to another
 * site. `same-origin`, not `no-referrer`: under `no-referrer` a browser sends its form POST with
 * `Origin: null` (the Fetch standard's "append a request Origin header"), and the POST handler
 * accepts only the page's own origin.
 */
function pageHeaders(reply: FastifyReply, formTargets: readonly string[] = []): FastifyReply {
  const formAction = formTargets.length ? `; form-action 'self' ${formTargets.join(' ')}` : ''
  return reply
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'${formAction}`,
    )
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
}

/** A CSP source for where the form's redirect goes: the origin, or the scheme of a custom one. */
function cspSource(uri: string): string | undefined {
  try {
    const url = new URL(uri)
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.origin
    return /^[a-z][a-z0-9+.-]*:$/i.test(url.protocol) ? url.protocol : undefined
  } catch {
    return undefined
  }
}

const isDocumentNavigation = (request: FastifyRequest) =>
  request.headers['sec-fetch-mode'] === 'navigate' && request.headers['sec-fetch-dest'] === 'document'

export async function mountConsentPage(app: FastifyInstance, options: ConsentPageOptions): Promise<void> {
  const { backend, sessions, clientMetadata, path } = options
  // The CSRF token of a cookie decision: keyed by the sessions' first key, so every replica checks it.
  const csrfKey = sessions
    ? createHmac('sha256', sessions.sessions.config.keys[0]!.key).update('authgate consent page csrf').digest()
    : undefined
  const csrfToken = (authorizationId: string, handle: string) =>
    createHmac('sha256', csrfKey!).update(`${authorizationId}\n${handle}`).digest('base64url')

  const identity = (request: FastifyRequest) => ({ clientIp: clientIp(request), requestId: request.id })

  /** The user's credential, an answer already sent (a refused cookie), or none. */
  async function credential(
    request: FastifyRequest,
    reply: FastifyReply,
    form: Record<string, string> | undefined,
  ): Promise<Credential | { answered: FastifyReply } | undefined> {
    const header = request.headers.authorization
    const bearer = header === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1]
    if (bearer !== undefined) return { token: bearer, via: 'bearer' }
    if (form?.access_token) return { token: form.access_token, via: 'form' }
    const consentMs = sessions?.sessions.config.oauthConsentMs
    if (sessions === undefined || consentMs === undefined) return undefined
    if (request.method === 'POST') {
      // The consent API's own rule (D76): the request's origin, and a session signed in within
      // AUTHGATE_SESSION_OAUTH_CONSENT or a same-origin top-level navigation (the page's form is one).
      const auth = await sessions.authenticate(request, reply, { guard: 'consent', revalidate: false })
      if (auth === undefined || 'answered' in auth) return auth
      return { token: auth.session.session.accessToken, via: 'cookie', handle: auth.session.handle }
    }
    const auth = await sessions.authenticate(request, reply, { revalidate: false })
    if (auth === undefined || 'answered' in auth) return auth
    // Reading the page with the cookie: a top-level navigation (no script receives the answer, the
    // way Supabase Auth's redirect arrives), or a session just signed in.
    const age = sessions.sessions.now() - auth.session.session.createdAt
    if (!isDocumentNavigation(request) && age > consentMs) {
      request.log.info('consent page: the session cookie is not taken outside a navigation after the consent window')
      return undefined
    }
    return { token: auth.session.session.accessToken, via: 'cookie', handle: auth.session.handle }
  }

  /** The backend's authorization details for the user, or its status when it refused. */
  async function details(request: FastifyRequest, id: string, token: string) {
    const answer = await backend.fetch(backend.resolve(`/oauth/authorizations/${encodeURIComponent(id)}`), {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      identity: identity(request),
      signal: AbortSignal.timeout(10_000),
    })
    const body: unknown = await answer.json().catch(() => undefined)
    return { status: answer.status, body: isRecord(body) ? body : {} }
  }

  /** The browser sent back to the client, with RFC 9207's `iss`. */
  async function backToClient(request: FastifyRequest, reply: FastifyReply, redirectUrl: string, status: 302 | 303) {
    const issuer = await backendIssuer(backend)
    const location = (issuer !== undefined ? withIssuer(redirectUrl, issuer) : undefined) ?? redirectUrl
    request.log.info({ status }, 'consent page: the browser goes back to the client')
    return pageHeaders(reply).code(status).header('location', location).send('')
  }

  function refused(reply: FastifyReply, status: number, title: string, message: string) {
    return pageHeaders(reply).code(status).send(messagePage(title, message))
  }

  /** The consent form for a credential, or the answer that replaces it. */
  async function showConsent(
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    cred: Credential,
    ticket: string,
  ) {
    const got = await details(request, id, cred.token)
    if (got.status === 200 && typeof got.body.redirect_url === 'string')
      return backToClient(request, reply, got.body.redirect_url, request.method === 'GET' ? 302 : 303)
    if (got.status === 401 || got.status === 403) {
      request.log.info({ status: got.status }, 'consent page: the credential was refused; signing in again')
      return pageHeaders(reply)
        .code(401)
        .send(signInPage(path, id, ticket, 'Your sign-in has expired or is not valid here. Sign in again.'))
    }
    if (got.status === 404)
      return refused(reply, 404, 'Request not found', 'This authorization request does not exist or has expired.')
    if (got.status !== 200) {
      request.log.warn({ status: got.status }, 'consent page: the authorization details could not be read')
      return refused(reply, 502, 'Something went wrong', 'The authorization request could not be read. Try again.')
    }
    const body = got.body
    const client = isRecord(body.client) ? body.client : {}
    const clientUuid = typeof client.id === 'string' ? client.id : ''
    const clientId = (clientUuid && (await clientMetadata?.urlOf(clientUuid).catch(() => undefined))) || clientUuid
    const redirectUri = typeof body.redirect_uri === 'string' ? body.redirect_uri : ''
    let redirectHost = redirectUri
    try {
      redirectHost = new URL(redirectUri).host || redirectUri
    } catch {
      // shown as it is
    }
    const fields: Record<string, string> = { authorization_id: id }
    if (ticket !== '') fields[TICKET_PARAM] = ticket
    if (cred.via === 'form') fields.access_token = cred.token
    if (cred.via === 'cookie') fields.csrf = csrfToken(id, cred.handle)
    const target = cspSource(redirectUri)
    return pageHeaders(reply, target ? [target] : [])
      .code(200)
      .send(
        consentPage({
          clientName: (typeof client.name === 'string' && client.name) || clientId,
          clientId,
          redirectHost,
          scopes: typeof body.scope === 'string' ? body.scope.split(' ').filter(Boolean) : [],
          userEmail: isRecord(body.user) && typeof body.user.email === 'string' ? body.user.email : undefined,
          action: path,
          fields,
        }),
      )
  }

  /** The sign-in form again, with a message. */
  const signInAgain = (reply: FastifyReply, status: number, id: string, ticket: string, message: string) =>
    pageHeaders(reply)
      .code(status)
      .send(signInPage(path, id, ticket, message))
  const WRONG = 'The e-mail or password is not right.'

  /**
   * The page's password sign-in: what `POST /token?grant_type=password` goes through (its per-client
   * limit ran as this route's onRequest; here its per-account limit, device cookie and reservation),
   * after the authorization's ticket: an authorization authgate did not see opened is answered as a
   * wrong password is, and no password is sent to Supabase Auth for it.
   */
  async function signIn(request: FastifyRequest, reply: FastifyReply, id: string, form: Record<string, string>) {
    const ticket = typeof form[TICKET_PARAM] === 'string' ? form[TICKET_PARAM] : ''
    if (!form.email || !form.password) return signInAgain(reply, 400, id, ticket, 'Enter your e-mail and password.')
    if (!options.tickets.valid(id, ticket)) {
      request.log.info(
        'consent page: sign-in for an authorization without a valid ticket, answered as a wrong password',
      )
      return signInAgain(reply, 400, id, ticket, WRONG)
    }
    // The address as POST /token validates it: one outside Supabase Auth's own e-mail rule could
    // be a spelling the per-account key and Supabase Auth read apart (no password goes for it).
    if (!BACKEND_EMAIL.test(form.email)) {
      request.log.info('consent page: sign-in with an address that is not an e-mail, answered as a wrong password')
      return signInAgain(reply, 400, id, ticket, WRONG)
    }
    const identifier = accountIdentifier({ email: form.email })
    const verdict = identifier !== undefined ? await options.passwordSignIn?.(request, reply, identifier) : undefined
    if (verdict?.kind === 'unavailable') {
      reply.header('retry-after', '1')
      return signInAgain(reply, 429, id, ticket, 'Signing in is unavailable for a moment. Try again shortly.')
    }
    if (verdict?.kind === 'refused') {
      reply
        .header('ratelimit-policy', policyHeader(verdict.policy))
        .header('ratelimit', rateLimitHeader(verdict.policy, verdict.decision))
        .header('retry-after', String(retryAfterSeconds(verdict.decision)))
      return signInAgain(reply, 429, id, ticket, 'Too many attempts. Wait a moment and try again.')
    }
    let answer: BackendResponse
    try {
      answer = await backend.fetch(backend.resolve('/token?grant_type=password'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ email: form.email, password: form.password }),
        identity: identity(request),
        signal: AbortSignal.timeout(10_000),
      })
    } catch (error) {
      // No answer: the reservation stays spent, as on /token when Supabase Auth cannot be reached.
      request.log.warn({ err: error }, 'consent page: Supabase Auth could not be asked to sign in')
      return signInAgain(reply, 502, id, ticket, 'Signing in failed. Try again.')
    }
    // The answer watch, as the relay tells it for /token: the reservation settled, a device cookie.
    const code = answer.headers.get('x-sb-error-code')
    reportAnswer(request.raw, answer.status, code === null ? [] : ['x-sb-error-code', code])
    const body: unknown = await answer.json().catch(() => undefined)
    if (answer.status !== 200 || !isRecord(body) || typeof body.access_token !== 'string') {
      request.log.info({ status: answer.status }, 'consent page: sign-in refused')
      if (answer.status === 429)
        return signInAgain(reply, 429, id, ticket, 'Too many attempts. Wait a moment and try again.')
      return signInAgain(reply, 400, id, ticket, WRONG)
    }
    return showConsent(request, reply, id, { token: body.access_token, via: 'form' }, ticket)
  }

  const get = async (request: FastifyRequest, reply: FastifyReply) => {
    const query = request.query as Record<string, unknown>
    const id = query.authorization_id
    const ticket = typeof query[TICKET_PARAM] === 'string' ? query[TICKET_PARAM] : ''
    if (typeof id !== 'string' || !AUTHORIZATION_ID.test(id))
      return refused(reply, 400, 'Invalid request', 'The link has no valid authorization_id.')
    const cred = await credential(request, reply, undefined)
    if (cred !== undefined && 'answered' in cred) return cred.answered
    if (cred === undefined)
      return pageHeaders(reply)
        .code(200)
        .send(signInPage(path, id, ticket, undefined))
    return showConsent(request, reply, id, cred, ticket)
  }

  const post = async (request: FastifyRequest, reply: FastifyReply) => {
    // Only the page itself posts here: its own origin, and no other site's request.
    const origin = request.headers.origin
    const site = request.headers['sec-fetch-site']
    if (origin !== ownOrigin(request) || (site !== undefined && site !== 'same-origin')) {
      request.log.warn({ origin, site }, 'consent page: a POST from another origin refused')
      return refused(reply, 403, 'Forbidden', 'This form can only be sent from the consent page itself.')
    }
    const form = (isRecord(request.body) ? request.body : {}) as Record<string, string>
    const id = form.authorization_id
    if (typeof id !== 'string' || !AUTHORIZATION_ID.test(id))
      return refused(reply, 400, 'Invalid request', 'The form has no valid authorization_id.')
    if (form.decision === 'sign_in') return signIn(request, reply, id, form)
    const ticket = typeof form[TICKET_PARAM] === 'string' ? form[TICKET_PARAM] : ''
    if (form.decision !== 'approve' && form.decision !== 'deny')
      return refused(reply, 400, 'Invalid request', 'Choose approve or deny.')
    const cred = await credential(request, reply, form)
    if (cred !== undefined && 'answered' in cred) return cred.answered
    if (cred === undefined)
      return pageHeaders(reply)
        .code(401)
        .send(signInPage(path, id, ticket, 'Sign in to decide.'))
    if (cred.via === 'cookie') {
      const expected = Buffer.from(csrfToken(id, cred.handle))
      const given = Buffer.from(typeof form.csrf === 'string' ? form.csrf : '')
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        request.log.warn('consent page: a cookie decision without the CSRF token of its session and authorization')
        return refused(reply, 403, 'Forbidden', 'The form is out of date. Open the link again.')
      }
    }
    const answer = await backend.fetch(backend.resolve(`/oauth/authorizations/${encodeURIComponent(id)}/consent`), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${cred.token}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({ action: form.decision }),
      identity: identity(request),
      signal: AbortSignal.timeout(10_000),
    })
    const body: unknown = await answer.json().catch(() => undefined)
    if (answer.status === 200 && isRecord(body) && typeof body.redirect_url === 'string') {
      request.log.info({ decision: form.decision }, 'consent page: the user decided')
      return backToClient(request, reply, body.redirect_url, 303)
    }
    request.log.warn({ status: answer.status }, 'consent page: the decision was refused')
    if (answer.status === 401 || answer.status === 403)
      return pageHeaders(reply)
        .code(401)
        .send(signInPage(path, id, ticket, 'Your sign-in has expired. Sign in again.'))
    if (answer.status === 404)
      return refused(reply, 404, 'Request not found', 'This authorization request does not exist or has expired.')
    return refused(reply, 502, 'Something went wrong', 'The decision could not be recorded. Try again.')
  }

  await app.register(async (scope) => {
    // The page's form: small, form-encoded, read once.
    scope.removeAllContentTypeParsers()
    // Read by the auth routes' reader (one buffer, not a Buffer per segment a slow client sends).
    const limit = 16 * 1024
    scope.addContentTypeParser('application/x-www-form-urlencoded', { bodyLimit: limit }, (request, payload, done) =>
      readBodyBytes(payload, request.headers['content-length'], limit, (err, bytes) =>
        // The first value of each name, read as the auth routes read their forms and queries.
        err === null ? done(null, backendValues(bytes!.toString('utf8'))) : done(err, undefined),
      ),
    )
    scope.route({ method: 'GET', url: path, exposeHeadRoute: false, schema: { hide: true }, handler: get })
    scope.route({
      method: 'POST',
      url: path,
      schema: { hide: true },
      ...(options.signInLimit ? { onRequest: options.signInLimit } : {}),
      handler: post,
    })
  })
}

/** AUTHGATE_OAUTH_CONSENT_PAGE: off, or the path the page is served at. */
export function parseConsentPagePath(variable: string, raw: string): string | undefined {
  const value = raw.trim()
  if (value === '' || isOff(value)) return undefined
  if (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(value) || value.includes('//') || /\/\.\.?(\/|$)/.test(value))
    throw new AuthgateConfigError(
      variable,
      `expected "off" or a path such as /oauth/consent, got ${JSON.stringify(raw)}`,
    )
  return value
}
