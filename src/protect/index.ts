import type { FastifyInstance } from 'fastify'
import { refuseUnknownOptions } from '../config/known-options.ts'
import fp from 'fastify-plugin'
import { SupabaseAuthClient } from '../core/backend.ts'
import { createProtection, type Protection } from './hook.ts'
import { resourceIdentifier, routeAuthOf } from './requirement.ts'
import {
  registerResourceMetadataRoute,
  resolveResourceMetadata,
  type ResolvedResourceMetadata,
  type ResourceMetadataOptions,
} from './resource-metadata.ts'
import { scopePolicy } from './scopes.ts'
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
  /**
   * OAuth protected resources with routes of their own (an MCP server at `https://api.example.com/mcp`):
   * each gets its RFC 9728 metadata at `/.well-known/oauth-protected-resource<path>`, and routes name
   * it with `auth: { resource }` to accept only tokens issued to an OAuth client for it (docs/mcp.md).
   */
  resources?: ReadonlyArray<ResourceMetadataOptions & { resource: string }>
  /**
   * Scopes the access-token hook writes into the token's `scope` claim, which routes may require
   * besides those Supabase Auth grants; never advertised (docs/mcp.md). A route requiring a scope
   * that is neither is refused when it is registered.
   */
  hookScopes?: readonly string[]
}

// Every key of ProtectOptions, checked complete by the type: anything else is refused by name.
const PROTECT_OPTIONS = Object.keys({
  issuer: true,
  audience: true,
  jwksUrl: true,
  backendUrl: true,
  backend: true,
  secret: true,
  jwks: true,
  clockToleranceSeconds: true,
  jwksCacheMaxAgeMs: true,
  jwksCooldownMs: true,
  jwksTimeoutMs: true,
  fetch: true,
  tokenCache: true,
  sessionCheck: true,
  apiKey: true,
  resourceMetadata: true,
  resources: true,
  hookScopes: true,
} satisfies Record<keyof ProtectOptions, true>)

/** Builds the verifier, the session checker and the metadata from the options (no Fastify needed). */
export function createProtectionFromOptions(options: ProtectOptions): {
  protection: Protection
  metadata: ReturnType<typeof resolveResourceMetadata> | undefined
  /** The metadata of each of `resources`. */
  resourceDocs: ResolvedResourceMetadata[]
  /** Closes the backend connection made here (none when `backend` was given). */
  close(): Promise<void>
} {
  refuseUnknownOptions(options, PROTECT_OPTIONS, 'protect.')
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
  const scopes = scopePolicy({ fromHook: options.hookScopes ?? [] })
  const metadata =
    options.resourceMetadata === false ? undefined : resolveResourceMetadata(options.issuer, options.resourceMetadata)
  if (metadata?.document.scopes_supported)
    scopes.check(metadata.document.scopes_supported, 'protect.resourceMetadata.scopesSupported')
  const resources = new Map<string, string>()
  const resourceDocs: ResolvedResourceMetadata[] = []
  const paths = new Set(metadata ? [metadata.path] : [])
  for (const [i, given] of (options.resources ?? []).entries()) {
    const where = `protect.resources[${i}]`
    let identifier: string
    try {
      identifier = resourceIdentifier(given.resource, `${where}.resource`)
    } catch (err) {
      throw new AuthgateConfigError(`${where}.resource`, (err as Error).message)
    }
    const resolved = resolveResourceMetadata(options.issuer, { ...given, resource: identifier })
    if (paths.has(resolved.path))
      throw new AuthgateConfigError(
        `${where}.resource`,
        `${identifier}: its metadata path ${resolved.path} is taken by another resource, or by the application's own metadata (\`resourceMetadata: false\` frees it)`,
      )
    if (resolved.document.scopes_supported) {
      scopes.check(resolved.document.scopes_supported, `${where}.scopesSupported`)
      // Only what a client can ask for is advertised: the hook's scopes are granted, not requested.
      const hookOnly = resolved.document.scopes_supported.filter((x) => scopes.fromHook.has(x))
      if (hookOnly.length > 0)
        throw new AuthgateConfigError(
          `${where}.scopesSupported`,
          `${hookOnly.join(' ')}: written by the access-token hook, a client cannot ask for it; leave it out`,
        )
    }
    paths.add(resolved.path)
    resources.set(identifier, resolved.url)
    resourceDocs.push(resolved)
  }
  return {
    protection: createProtection(verifier, sessions, metadata?.url, { resources, scopes }),
    metadata,
    resourceDocs,
    close: async () => own?.close(),
  }
}

async function protectPlugin(app: FastifyInstance, options: ProtectOptions): Promise<void> {
  if (app.hasDecorator('authgateProtect')) throw new Error('protect: the plugin is registered twice')
  const { protection, metadata, resourceDocs, close } = createProtectionFromOptions(options)
  app.addHook('onClose', close)
  app.decorate('authgateProtect', protection)
  if (!app.hasRequestDecorator('user')) app.decorateRequest('user', null)
  if (metadata) registerResourceMetadataRoute(app, metadata)
  for (const doc of resourceDocs) registerResourceMetadataRoute(app, doc)
  // Start-up, not the first request: a route whose requirement no token could meet is refused
  // when it is registered (a scope Supabase Auth cannot grant, a resource without metadata).
  app.addHook('onRoute', (route) => {
    const auth = routeAuthOf(route.config)
    if (auth === undefined) return
    const methods = Array.isArray(route.method) ? route.method.join(',') : route.method
    protection.check(auth, `${methods} ${route.url} auth`)
  })
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
  acceptedAudiences,
  resourceIdentifier,
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
export { scopePolicy, SUPABASE_AUTH_SCOPES, type ScopePolicy, type ScopeOptions } from './scopes.ts'
export type { AuthUser, AuthAssuranceLevel, AuthMethodReference } from './claims.ts'
