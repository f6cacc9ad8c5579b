import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { SupabaseAuthClient } from '../core/backend.ts'
import { resolveSessionConfig, type SessionConfig, type SessionOptions } from './config.ts'
import { SessionGate } from './gate.ts'
import { CookieSessions } from './manager.ts'
import { MemorySessionStore } from './memory-store.ts'
import { RedisSessionStore } from './redis-store.ts'
import type { SessionStore } from './store.ts'
import type { RouteAccess } from '../openapi/types.ts'

export { SessionGate } from './gate.ts'
export { CookieSessions } from './manager.ts'
export type { SessionConfig, SessionOptions } from './config.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Cookie sessions, when turned on (docs/sessions.md); the protect hook takes the cookie through it. */
    authgateSessions?: SessionGate
  }
}

/** The session store the configuration names. */
export function createSessionStore(config: SessionConfig, log: FastifyBaseLogger): SessionStore {
  if (config.store.kind === 'memory') return new MemorySessionStore({ maxEntries: config.store.maxEntries })
  let lastError = ''
  const store = new RedisSessionStore(config.store, {
    // One line per distinct failure, not one per reconnect attempt.
    onConnectionError: (err) => {
      if (err.message === lastError) return
      lastError = err.message
      log.warn({ err: { message: err.message } }, 'cookie sessions: Redis connection error')
    },
  })
  // Once connected again, the next failure is news, even when it reads as the last one did.
  store.client.on('ready', () => (lastError = ''))
  return store
}

/** Builds the sessions of the plugin's `sessions` option (a resolved configuration passes unchanged). */
export function createSessionGate(
  options: SessionOptions,
  backend: SupabaseAuthClient,
  log: FastifyBaseLogger,
  store?: SessionStore,
): SessionGate {
  const config = resolveSessionConfig(options)
  const sessions = new CookieSessions({
    config,
    store: store ?? createSessionStore(config, log),
    backend,
    log,
  })
  return new SessionGate(sessions)
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * With cookie sessions, a protected route of the application (one with `schema.access`, as
 * `defineRoute` states it) also answers 403 to a cross-site use of the cookie on unsafe methods,
 * 503 when the store cannot answer and 502/504 when Supabase Auth cannot refresh or confirm the
 * session: added to what the route documents, as it is registered.
 */
export function documentCookieAccess(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const access = (route.schema as { access?: Partial<RouteAccess> } | undefined)?.access
    if (access === undefined || typeof access.errors !== 'object') return
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.some((m) => UNSAFE.has(String(m).toUpperCase())))
      access.errors['403'] ??= {
        description:
          'Forbidden: a role, assurance level or scope is missing, or a cross-site use of the session cookie (`cross_site_request`)',
      }
    access.errors['503'] ??= { description: 'The session store could not be reached (`session_store_unavailable`)' }
    // The cookie's session is refreshed, and confirmed past AUTHGATE_SESSION_REVALIDATE, before the route runs.
    access.errors['502'] ??= {
      description:
        'Supabase Auth could not be reached to refresh or confirm the cookie session (`backend_unreachable`)',
    }
    access.errors['504'] ??= {
      description:
        'Supabase Auth did not answer the refresh or confirmation of the cookie session in time (`request_timeout`)',
    }
  })
}
