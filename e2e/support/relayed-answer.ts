import { TOKEN_ERRORS } from '../../src/auth/oauth-conformance.ts'

/** The decision of an answer, as the request-reading suites compare them: status and error code. */
export interface Decision {
  status: number
  /** The body's `code` (the error code in the shape these suites ask for), else its `error`. */
  code: unknown
}

/**
 * Supabase Auth's decision as authgate relays it: the same, but on `POST /oauth/token`, where its
 * refusals become RFC 6749's errors (src/auth/oauth-conformance.ts: 403 becomes 400).
 */
export function asRelayed<T extends Decision>(route: string, straight: T): T {
  const error = typeof straight.code === 'string' ? TOKEN_ERRORS[straight.code] : undefined
  if (route !== 'POST /oauth/token' || error === undefined) return straight
  return { ...straight, status: straight.status === 403 ? 400 : straight.status, code: error }
}
