import { createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { backendUrlQuery } from '../../core/go-values.ts'
import { heldHeader, type HeldAnswer } from '../../core/held-answer.ts'
import { withHeader } from '../oauth-conformance.ts'

/**
 * Tickets of the authorizations authgate saw Supabase Auth open. Supabase Auth shows an
 * authorization only to a signed-in user, so the consent page cannot ask it whether one exists
 * before it asks for a password. Instead, when `GET /oauth/authorize` sends the browser to the page,
 * authgate adds a ticket to that redirect: the authorization id and an expiry under an HMAC. The
 * page's sign-in checks it before any password goes to Supabase Auth, and answers a missing, forged
 * or expired one exactly as it answers a wrong password: nobody learns whether a password is right
 * without an authorization Supabase Auth opened in the last ten minutes (its default lifetime).
 */

/** The query parameter (and form field) the ticket travels in. */
export const TICKET_PARAM = 'ticket'

/** Supabase Auth's default authorization lifetime (GOTRUE_OAUTH_SERVER_AUTHORIZATION_TTL). */
export const TICKET_TTL_MS = 10 * 60_000

export interface ConsentTickets {
  /** The page's path: redirects to it get a ticket. */
  path: string
  issue(authorizationId: string): string
  /** Whether `ticket` is one this deployment issued for `authorizationId` and it has not expired. */
  valid(authorizationId: string, ticket: unknown): boolean
}

export function consentTickets(secret: string | Buffer, path: string, now: () => number = Date.now): ConsentTickets {
  // A key of its own, so a ticket's MAC is never anything else's.
  const key = createHmac('sha256', secret).update('authgate consent page ticket v1').digest()
  const mac = (id: string, expiry: string) =>
    createHmac('sha256', key).update(`${id}\n${expiry}`).digest('base64url').slice(0, 32)
  return {
    path,
    issue(authorizationId) {
      const expiry = String(Math.ceil((now() + TICKET_TTL_MS) / 1000))
      return `${expiry}.${mac(authorizationId, expiry)}`
    },
    valid(authorizationId, ticket) {
      if (typeof ticket !== 'string') return false
      const m = /^(\d{1,12})\.([A-Za-z0-9_-]{32})$/.exec(ticket)
      if (m === null || Number(m[1]) * 1000 < now()) return false
      const expected = Buffer.from(mac(authorizationId, m[1]!))
      return timingSafeEqual(Buffer.from(m[2]!), expected)
    },
  }
}

/**
 * The mend of `GET /oauth/authorize`'s answer: a redirect to authgate's consent page gets the
 * authorization's ticket. Any other answer goes as it came.
 */
export function ticketOnConsentRedirect(answer: HeldAnswer, request: FastifyRequest): HeldAnswer {
  const tickets = request.server.authgate.consentTickets
  if (tickets === undefined || answer.status < 300 || answer.status > 399) return answer
  const location = heldHeader(answer, 'location')
  if (location === undefined) return answer
  let url: URL
  try {
    url = new URL(location)
  } catch {
    return answer
  }
  // Read as every query authgate decides on is read (Supabase Auth wrote it, so any reader agrees today).
  const query = backendUrlQuery(location)
  const id = query.authorization_id
  if (url.pathname !== tickets.path || id === undefined || TICKET_PARAM in query) return answer
  // Appended to the query as it came (not re-serialised).
  const hash = location.indexOf('#')
  const head = hash === -1 ? location : location.slice(0, hash)
  const tail = hash === -1 ? '' : location.slice(hash)
  const ticketed = `${head}&${TICKET_PARAM}=${encodeURIComponent(tickets.issue(id))}${tail}`
  return { ...answer, headers: withHeader(answer.headers, 'location', ticketed) }
}
