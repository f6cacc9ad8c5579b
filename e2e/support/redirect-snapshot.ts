/** Headers that describe one hop or one moment, not what the backend said. */
const PER_HOP = new Set(['connection', 'keep-alive', 'date', 'transfer-encoding', 'content-length'])
/** The one header authgate adds to every answer it relays (documented in the README's Operations). */
const GATEWAY_OWN = 'x-request-id'

export interface RedirectSnapshot {
  status: number
  location: string
  /** Response headers except per-hop ones, Location and authgate's request id, names lower-cased. */
  headers: Record<string, string>
  /** authgate's `X-Request-Id` (undefined from the backend directly). */
  requestId: string | undefined
  body: string
}

/** What a browser gets from one request whose redirect is not followed. */
export async function fetchRedirect(url: string, init: RequestInit = {}): Promise<RedirectSnapshot> {
  const response = await fetch(url, { ...init, redirect: 'manual' })
  const headers: Record<string, string> = {}
  for (const [name, value] of response.headers) {
    if (!PER_HOP.has(name) && name !== 'location' && name !== GATEWAY_OWN) headers[name] = value
  }
  const snapshot = {
    status: response.status,
    location: response.headers.get('location') ?? '',
    headers,
    body: await response.text(),
  } as RedirectSnapshot
  // Not enumerable: a snapshot through authgate deep-equals the backend's own, request id aside.
  Object.defineProperty(snapshot, 'requestId', { value: response.headers.get(GATEWAY_OWN) ?? undefined })
  return snapshot
}

/** Go's http.Redirect writes the target HTML-escaped into the body. */
export function htmlEscaped(url: string): string {
  return url
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&#34;')
    .replaceAll("'", '&#39;')
}

/** `a=1&b=&c=3` → [['a','1'], ['b',''], ['c','3']], order kept (Supabase Auth sorts its keys). */
export function entries(encoded: string): Array<[string, string]> {
  return [...new URLSearchParams(encoded)]
}
