/**
 * A route's name in configuration and in the tables keyed by route (rate limits, backend answers):
 * `METHOD /template`, the template relative to the prefix (`POST /factors/{factor_id}/verify`).
 * Built and read here only. The names of the mounted routes are typed as `RouteId` (src/auth/routes/index.ts).
 */
export interface RouteKeyParts {
  /** Upper case. */
  method: string
  path: string
}

export function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`
}

/**
 * Reads a name as an operator writes it (`post  /signup` is `POST /signup`); undefined when it is
 * not `METHOD /path`. Whether such a route exists is for the caller to check.
 */
export function parseRouteKey(raw: string): (RouteKeyParts & { key: string }) | undefined {
  const m = /^([A-Za-z]+)\s+(\/\S*)$/.exec(raw.trim())
  if (!m) return undefined
  const method = m[1]!.toUpperCase()
  const path = m[2]!
  return { method, path, key: `${method} ${path}` }
}
