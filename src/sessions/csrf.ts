import type { FastifyRequest } from 'fastify'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Whether a method may change state: only those need a cross-site check. */
export const isUnsafeMethod = (method: string): boolean => !SAFE_METHODS.has(method.toUpperCase())

/** The origin the request was addressed to, as a browser on the same origin would send it. */
export function ownOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`
}

/**
 * Why a cookie-authenticated unsafe request is refused as cross-site, or undefined when it may go
 * on. `Origin` must be present and be the request's own origin or one of `allowed`; `Sec-Fetch-Site`,
 * when the browser sends it, must be `same-origin` or `same-site`. Browsers send `Origin` on every
 * POST, PUT, PATCH and DELETE, so a missing one is not a browser on an allowed page.
 */
export function crossSiteReason(request: FastifyRequest, allowed: readonly string[]): string | undefined {
  const origin = request.headers.origin
  if (origin === undefined || origin === '' || origin === 'null')
    return 'a cookie-authenticated request must carry the Origin header of an allowed origin'
  if (origin !== ownOrigin(request) && !allowed.includes(origin)) return `the origin ${origin} is not allowed`
  const site = request.headers['sec-fetch-site']
  if (site !== undefined && site !== 'same-origin' && site !== 'same-site')
    return `a ${String(site)} request may not use the session cookie`
  return undefined
}

/**
 * The cross-site check of a cookie-authenticated GET that changes something (the route table's
 * `cookieGuard`). A top-level navigation from another site carries a `SameSite=Lax` cookie and no
 * `Origin`, and browsers leave `Origin` off same-origin GETs too: without one, `Sec-Fetch-Site` must
 * say `same-origin`. A browser that sends neither cannot show where the request came from and is
 * refused (the POST form of such a route is there for it).
 */
export function crossSiteGetReason(request: FastifyRequest, allowed: readonly string[]): string | undefined {
  if (request.headers.origin !== undefined) return crossSiteReason(request, allowed)
  const site = request.headers['sec-fetch-site']
  if (site === 'same-origin') return undefined
  if (site === undefined)
    return 'a cookie-authenticated GET that changes state must carry Sec-Fetch-Site: same-origin or an allowed Origin'
  return `a ${String(site)} GET that changes state may not use the session cookie`
}

/**
 * Whether the request is a top-level navigation from a page of the same origin: the user followed
 * a link or sent a form there, the answer replaced that page, and no script of another page
 * received it. An iframe (`Sec-Fetch-Dest: iframe`) is not one: its parent could read it.
 */
export function isSameOriginNavigation(request: FastifyRequest): boolean {
  const h = request.headers
  return (
    h['sec-fetch-mode'] === 'navigate' && h['sec-fetch-site'] === 'same-origin' && h['sec-fetch-dest'] === 'document'
  )
}

/**
 * The cross-site check of a safe-method request carrying a stand-in token (docs/sessions.md): a
 * page on another origin that holds a stolen stand-in sends it with `fetch`, which always carries
 * `Origin` across origins, so an `Origin` present must be allowed as for unsafe methods; without
 * one (a same-origin GET), `Sec-Fetch-Site`, when sent, must say `same-origin`.
 */
export function standInGetReason(request: FastifyRequest, allowed: readonly string[]): string | undefined {
  if (request.headers.origin !== undefined) return crossSiteReason(request, allowed)
  const site = request.headers['sec-fetch-site']
  if (site === undefined || site === 'same-origin') return undefined
  return `a ${String(site)} request may not use a stand-in token`
}
