import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'

/**
 * Headers a browser may read from authgate's answers besides the CORS-safelisted ones: the API
 * version supabase-js reads to pick the error shape, the error code, the request id, and the
 * rate-limit headers.
 */
export const EXPOSED_HEADERS = [
  'X-Supabase-Api-Version',
  'x-sb-error-code',
  'X-Request-Id',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
]

/**
 * CORS for the auth routes (@fastify/cors in their own context): preflights answered by authgate,
 * never forwarded — Supabase Auth's own answer would not allow `apikey`, which supabase-js always
 * sends. The allowed request headers are those the preflight asks for (supabase-js's list —
 * `authorization`, `apikey`, `content-type`, `x-client-info`, `x-supabase-api-version`,
 * trace headers — and any other), since the origins are the operator's own list. Explicit origins
 * may send credentials (cookies); `*` cannot, by the CORS rules.
 */
export async function registerCors(
  scope: FastifyInstance,
  origins: readonly string[],
  requestIdHeader = 'x-request-id',
): Promise<void> {
  if (origins.length === 0) return
  const any = origins.length === 1 && origins[0] === '*'
  await scope.register(cors, {
    origin: any ? '*' : [...origins],
    credentials: !any,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposedHeaders: [...EXPOSED_HEADERS.filter((h) => h !== 'X-Request-Id'), requestIdHeader],
    // Browsers cap this (Chromium at 2 h); 10 min keeps a configuration change quick to take effect.
    maxAge: 600,
    strictPreflight: false,
  })
}
