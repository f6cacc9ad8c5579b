import { errors, jwtVerify, type JWTVerifyGetKey } from 'jose'
import type { SupabaseAuthClient } from '../core/backend.ts'
import { toAuthUser, type AuthUser } from './claims.ts'
import { createJwks, type FetchImplementation, type Jwks } from './jwks.ts'
import { JwksUnavailableError, TokenRejected } from './errors.ts'
import { VerifiedTokenCache, type TokenCacheOptions } from './token-cache.ts'
import { AuthgateConfigError } from '../core/config-error.ts'

/** The asymmetric algorithms Supabase Auth signs with. */
export const ASYMMETRIC_ALGORITHMS = ['ES256', 'ES512', 'RS256', 'RS512', 'EdDSA', 'Ed25519'] as const

export interface VerifierOptions {
  /**
   * The `iss` every token must carry: Supabase Auth's `GOTRUE_JWT_ISSUER`, which behind authgate is
   * the public URL plus the prefix (`https://api.example.com/auth`); on Supabase's platform
   * `https://<ref>.supabase.co/auth/v1`.
   */
  issuer: string
  /** The accepted `aud` values (default `authenticated`, Supabase Auth's `GOTRUE_JWT_AUD`). */
  audience?: string | string[]
  /** Where the signing keys are (default: `<backend>/.well-known/jwks.json`). */
  jwksUrl?: URL
  /** Supabase Auth's own URL (not the public one); the key set and the session check use it. */
  backendUrl?: URL
  /** The connection to Supabase Auth to use (`buildApp` passes its own); made from `backendUrl` otherwise. */
  backend?: SupabaseAuthClient
  /** HS256 secret (`GOTRUE_JWT_SECRET`) for projects whose tokens are still signed with it. */
  secret?: string
  /** `false` verifies with the secret only and never fetches a key set. */
  jwks?: boolean
  /** Allowed clock skew for `exp`, `nbf` and `iat`, in seconds (default 5). */
  clockToleranceSeconds?: number
  jwksCacheMaxAgeMs?: number
  jwksCooldownMs?: number
  jwksTimeoutMs?: number
  fetch?: FetchImplementation
  /**
   * Remembers successful verifications by token until the token's `exp`, so a token sent again
   * costs a lookup, not a signature check (on by default; `false` verifies every request in full).
   */
  tokenCache?: TokenCacheOptions | false
}

export { JwksUnavailableError, TokenRejected }

export interface TokenVerifier {
  /**
   * The typed claims of a valid token; throws `TokenRejected` or `JwksUnavailableError`. `audience`
   * replaces the configured audience for this call (a route's own, docs/decisions.md D80).
   */
  verify(token: string, audience?: readonly string[]): Promise<AuthUser>
  readonly issuer: string
  readonly jwks: Jwks | undefined
  /** The verified-token cache, unless turned off. */
  readonly cache: VerifiedTokenCache | undefined
}

function describe(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the access token has expired'
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return 'the access token was issued by another issuer'
    if (err.claim === 'nbf') return 'the access token is not valid yet'
    return `the access token's ${err.claim} claim is invalid`
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the access token signature is invalid'
  if (err instanceof errors.JWKSNoMatchingKey) return 'the access token is signed with an unknown key'
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the access token is signed with an algorithm not accepted here'
  return 'the access token is malformed'
}

export function createTokenVerifier(options: VerifierOptions): TokenVerifier {
  if (!options.issuer)
    throw new AuthgateConfigError('protect.issuer', 'is required (Supabase Auth’s GOTRUE_JWT_ISSUER)')
  const useJwks = options.jwks !== false
  if (!useJwks && !options.secret) throw new AuthgateConfigError('protect.secret', 'is required with `jwks: false`')
  let jwksUrl = options.jwksUrl
  if (useJwks && !jwksUrl) {
    if (!options.backend)
      throw new AuthgateConfigError('protect.jwksUrl', 'give `backendUrl` or `jwksUrl` for the signing keys')
    jwksUrl = options.backend.resolve('/.well-known/jwks.json')
  }
  // The key set on the backend goes through its connection (its `apikey` included); another URL is plain fetch.
  const fetchKeys =
    options.fetch ??
    (options.backend && jwksUrl?.origin === options.backend.url.origin
      ? (options.backend.fetch as unknown as FetchImplementation)
      : undefined)
  const jwks =
    useJwks && jwksUrl
      ? createJwks({
          url: jwksUrl,
          ...(options.jwksCacheMaxAgeMs !== undefined ? { cacheMaxAgeMs: options.jwksCacheMaxAgeMs } : {}),
          ...(options.jwksCooldownMs !== undefined ? { cooldownMs: options.jwksCooldownMs } : {}),
          ...(options.jwksTimeoutMs !== undefined ? { timeoutMs: options.jwksTimeoutMs } : {}),
          ...(fetchKeys ? { fetch: fetchKeys } : {}),
        })
      : undefined
  const secret = options.secret ? new TextEncoder().encode(options.secret) : undefined
  const algorithms: string[] = [...(jwks ? ASYMMETRIC_ALGORITHMS : []), ...(secret ? ['HS256'] : [])]

  const getKey: JWTVerifyGetKey = (header, token) => {
    // Only reached for an allowed algorithm: HS256 is allowed only when a secret is configured.
    if (header.alg === 'HS256') return secret!
    return jwks!.getKey(header, token)
  }
  const defaultAudience: readonly string[] =
    options.audience === undefined
      ? ['authenticated']
      : typeof options.audience === 'string'
        ? [options.audience]
        : options.audience
  // `aud` is checked after the signature (below), not by jose: routes may accept other audiences,
  // and the verified-token cache holds a token whatever route it was first sent to.
  const verifyOptions = {
    issuer: options.issuer,
    algorithms,
    clockTolerance: options.clockToleranceSeconds ?? 5,
    requiredClaims: ['exp', 'sub'],
  }

  const cache = options.tokenCache === false ? undefined : new VerifiedTokenCache(jwks, options.tokenCache)

  return {
    issuer: options.issuer,
    jwks,
    cache,
    async verify(token, audience = defaultAudience) {
      const known = cache?.get(token)
      if (known !== undefined) return checkAudience(known, audience)
      let payload, protectedHeader
      try {
        ;({ payload, protectedHeader } = await jwtVerify(token, getKey, verifyOptions))
      } catch (err) {
        if (err instanceof JwksUnavailableError) throw err
        throw new TokenRejected(describe(err), { cause: err })
      }
      // jose checks `iat` only against a maximum age; a token issued later than now (beyond the
      // tolerance) comes from a wrong clock or a forged issuer, and is refused like an early `nbf`.
      if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + verifyOptions.clockTolerance)
        throw new TokenRejected('the access token was issued in the future')
      const user = toAuthUser(payload, token)
      if (typeof user === 'string') throw new TokenRejected(user)
      cache?.set(token, { ...user }, protectedHeader.alg, protectedHeader.kid)
      return checkAudience(user, audience)
    },
  }
}

/** The user when the token's `aud` (a string or a list) names one of `accepted`; refused otherwise. */
function checkAudience(user: AuthUser, accepted: readonly string[]): AuthUser {
  const aud = user.claims.aud
  const given = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : []
  if (!given.some((a) => accepted.includes(a))) throw new TokenRejected('the access token is for another audience')
  return user
}
