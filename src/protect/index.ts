import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { SupabaseAuthClient } from '../core/backend.ts'
import { createProtection, type Protection } from './hook.ts'
import {
  registerResourceMetadataRoute,
  resolveResourceMetadata,
  type ResourceMetadataOptions,
} from './resource-metadata.ts'
import { SessionChecker, type SessionCheckOptions } from './session.ts'
import { createTokenVerifier, type VerifierOptions } from './verify.ts'
import { AuthgateConfigError } from '../core/config-error.ts'

export interface ProtectOptions extends VerifierOptions {
  /**
   * Lets routes with `auth: { session: true }` ask Supabase Auth whether the token's session is
   * still alive (a cached `GET /user`). `true` for the defaults; off unless given.
   */
  sessionCheck?: boolean | Omit<SessionCheckOptions, 'backend'>
  /** Hosted Supabase: the `apikey` sent with the key-set and session requests (when `backend` is not given). */
  apiKey?: string
  /** RFC 9728 metadata at `/.well-known/oauth-protected-resource` (on unless `false`). */
  resourceMetadata?: ResourceMetadataOptions | false
}

/** Builds the verifier, the session checker and the metadata from the options (no Fastify needed). */
export function createProtectionFromOptions(options: ProtectOptions): {
  protection: Protection
  metadata: ReturnType<typeof resolveResourceMetadata> | undefined
  /** Closes the backend connection made here (none when `backend` was given). */
  close(): Promise<void>
} {
  // A connection of its own only when the application did not hand over authgate's.
  const own =
    options.backend === undefined && options.backendUrl !== undefined
      ? new SupabaseAuthClient({
          url: options.backendUrl,
          apiKey: options.apiKey,
          timeoutMs: 5000,
          connectTimeoutMs: 5000,
          connections: 16,
        })
      : undefined
  const backend = options.backend ?? own
  const verifier = createTokenVerifier({ ...options, ...(backend ? { backend } : {}) })
  let sessions: SessionChecker | undefined
  if (options.sessionCheck) {
    if (!backend) throw new AuthgateConfigError('protect.sessionCheck', 'needs `backendUrl`')
    sessions = new SessionChecker({
      backend,
      ...(options.sessionCheck === true ? {} : options.sessionCheck),
    })
  }
  const metadata =
    options.resourceMetadata === false ? undefined : resolveResourceMetadata(options.issuer, options.resourceMetadata)
  return {
    protection: createProtection(verifier, sessions, metadata?.url),
    metadata,
    close: async () => own?.close(),
  }
}

async function protectPlugin(app: FastifyInstance, options: ProtectOptions): Promise<void> {
  if (app.hasDecorator('authgateProtect')) throw new Error('protect: the plugin is registered twice')
  const { protection, metadata, close } = createProtectionFromOptions(options)
  app.addHook('onClose', close)
  app.decorate('authgateProtect', protection)
  if (!app.hasRequestDecorator('user')) app.decorateRequest('user', null)
  if (metadata) registerResourceMetadataRoute(app, metadata)
}

/**
 * Verifies Supabase Auth access tokens on the application's routes. Register it on the root
 * instance (it is not encapsulated, so every route sees it), then give routes an `auth` option:
 *
 * ```ts
 * await app.register(authgateProtect, { backendUrl, issuer: 'https://api.example.com/auth' })
 * app.route(defineRoute({ method: 'GET', url: '/me', auth: 'required', handler: (req) => req.user }))
 * ```
 *
 * A named plugin, so Fastify's errors and other plugins' `dependencies` can refer to it.
 */
export const authgateProtect = fp(protectPlugin, { name: 'authgate-protect', fastify: '5.x' })

export { createProtection, routeAuthHook, type Protection } from './hook.ts'
export {
  normaliseAuth,
  routeAuthOf,
  canForbid,
  type AuthOption,
  type AuthRequirement,
  type RouteAuth,
} from './requirement.ts'
export { createTokenVerifier, TokenRejected, JwksUnavailableError, ASYMMETRIC_ALGORITHMS } from './verify.ts'
export type { TokenVerifier, VerifierOptions } from './verify.ts'
export { createJwks, type Jwks, type JwksOptions } from './jwks.ts'
export { VerifiedTokenCache, type TokenCacheOptions } from './token-cache.ts'
export { SessionChecker, SessionCheckUnavailableError, type SessionCheckOptions, type SessionState } from './session.ts'
export {
  resolveResourceMetadata,
  PROTECTED_RESOURCE_WELL_KNOWN,
  type ResourceMetadata,
  type ResourceMetadataOptions,
} from './resource-metadata.ts'
export { bearerChallenge } from './www-authenticate.ts'
export type { AuthUser, AuthAssuranceLevel, AuthMethodReference } from './claims.ts'
