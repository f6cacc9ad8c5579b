import Fastify, { type FastifyInstance } from 'fastify'
import type { RateLimiter } from '../../../src/ratelimit/limiter.ts'
import type { LimitableRoute } from '../../../src/ratelimit/abuse-config.ts'
import { LIMITABLE_ROUTES } from '../../../src/auth/routes/index.ts'

/** The sign-in and sign-up routes limited by default (docs/decisions.md, D11). */
export const DEFAULT_LIMITED = [
  'POST /signup',
  'POST /token',
  'POST /otp',
  'POST /recover',
  'POST /resend',
  'POST /oauth/token',
  'POST /oauth/clients/register',
  'POST /passkeys/authentication/options',
  'POST /passkeys/authentication/verify',
]

export const KNOWN_ROUTES = [
  ...DEFAULT_LIMITED,
  'GET /settings',
  'GET /user',
  'PATCH /passkeys/{id}',
  'DELETE /passkeys/{id}',
]

/** The route table as the limiter reads it: KNOWN_ROUTES, DEFAULT_LIMITED limited by default, the real table's account and message routes. */
export const ROUTES: LimitableRoute[] = KNOWN_ROUTES.map((key) => {
  const real = LIMITABLE_ROUTES.find((r) => r.key === key)
  return {
    key,
    rateLimited: DEFAULT_LIMITED.includes(key),
    account: real?.account,
    sendsMessages: real?.sendsMessages,
  }
})

export interface TinyApp {
  app: FastifyInstance
  /** Calls that reached a handler (the stand-in for the backend), per route. */
  handled: Map<string, number>
}

/**
 * A Fastify app mounting KNOWN_ROUTES the way the gateway does: each route's onRequest hook is
 * whatever `hookFor` returns for it. Handlers stand in for the backend and count their calls.
 */
export function tinyApp(limiter: RateLimiter, options: { trustProxy?: string[] } = {}): TinyApp {
  const app = Fastify({ trustProxy: options.trustProxy ?? false })
  const handled = new Map<string, number>()
  for (const route of KNOWN_ROUTES) {
    const [method, template] = route.split(' ') as [string, string]
    const hook = limiter.hookFor(method, template)
    app.route({
      method,
      url: template.replace(/\{(\w+)\}/g, ':$1'),
      ...(hook ? { onRequest: hook } : {}),
      handler: async () => {
        handled.set(route, (handled.get(route) ?? 0) + 1)
        return { ok: true }
      },
    })
  }
  return { app, handled }
}
