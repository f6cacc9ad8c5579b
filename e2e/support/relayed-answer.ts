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

/**
 * Sends one JSON request (no body when `body` is undefined) in the newer error shape
 * (`x-supabase-api-version`), redirects not followed, and reads its decision.
 */
export async function decisionOf(
  url: string,
  method: string,
  body: string | undefined,
  token?: string,
): Promise<Decision> {
  const res = await fetch(url, {
    method,
    headers: {
      'content-type': 'application/json',
      'x-supabase-api-version': '2024-01-01',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body !== undefined ? { body } : {}),
    redirect: 'manual',
  })
  const text = await res.text()
  let code: unknown
  try {
    const json = JSON.parse(text) as Record<string, unknown>
    code = json.code ?? json.error
  } catch {
    code = undefined
  }
  return { status: res.status, code }
}
