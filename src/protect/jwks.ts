import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors,
  jwksCache,
  type ExportedJWKSCache,
  type FetchImplementation,
  type JWSHeaderParameters,
  type FlattenedJWSInput,
  type JSONWebKeySet,
} from 'jose'
import { JwksUnavailableError } from './errors.ts'

export type { FetchImplementation }
export { JwksUnavailableError }

export interface JwksOptions {
  /** Where the key set is, e.g. `http://127.0.0.1:9999/.well-known/jwks.json`. */
  url: URL
  /** How long keys are used before the set is fetched again (default 10 minutes, what Supabase Auth's `Cache-Control` says). */
  cacheMaxAgeMs?: number
  /**
   * Least time between two fetches caused by a token whose `kid` is not in the set (default 30 s):
   * a rotated key is picked up on its first token, and a flood of made-up `kid`s costs one fetch per
   * period, not one per request.
   */
  cooldownMs?: number
  /** Longest wait for the key set (default 5 s). */
  timeoutMs?: number
  /** Fetch implementation (default: Node's fetch). */
  fetch?: FetchImplementation
}

export type KeyResolver = ReturnType<typeof createLocalJWKSet>

export interface Jwks {
  /** For `jwtVerify`: the key a token's header names, fetching the set when needed. */
  getKey: KeyResolver
  /**
   * The set last fetched, if any: the same object until the next successful fetch replaces it, so
   * a change of set is a change of identity (read it, never modify it).
   */
  current(): JSONWebKeySet | undefined
  /** Whether the set was fetched less than the cache's maximum age ago. */
  fresh(): boolean
  /** True once a set has been fetched; fetches it now when none has been (concurrent calls share one fetch). */
  load(): Promise<boolean>
}

function isFetchFailure(err: unknown): boolean {
  // jose's own errors about the set itself, and whatever fetch throws (TypeError, AbortError, ...).
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) return true
  if (err instanceof errors.JOSEError) return err.code === 'ERR_JOSE_GENERIC'
  return true
}

/**
 * The backend's signing keys, through jose's remote key set (cache, refetch on an unknown `kid`
 * after a cooldown, concurrent fetches shared). One addition: when a refetch fails but keys were
 * fetched before, those keys keep being used (and no new fetch is tried within the cooldown), so
 * a restarting backend does not turn every protected request into an error; when none were, the
 * failure itself is repeated within the cooldown, so tokens cannot turn into one fetch each.
 */
export function createJwks(options: JwksOptions): Jwks {
  const cooldownMs = options.cooldownMs ?? 30_000
  // jose writes each fetched set here (a new object per fetch): the set without the deep copy its
  // `jwks()` makes on every call, and its identity tells when the set changed.
  const fetched: Partial<ExportedJWKSCache> = {}
  const remote = createRemoteJWKSet(options.url, {
    cacheMaxAge: options.cacheMaxAgeMs ?? 600_000,
    cooldownDuration: cooldownMs,
    timeoutDuration: options.timeoutMs ?? 5_000,
    [jwksCache]: fetched as ExportedJWKSCache,
    ...(options.fetch ? { [customFetch]: options.fetch } : {}),
  })
  let stale: { jwks: JSONWebKeySet; resolver: KeyResolver } | undefined
  let failedAt = -Infinity
  let lastFailure: JwksUnavailableError | undefined

  // Built only when a fetch has failed, and once per set: not on every token.
  const staleResolver = (): KeyResolver | undefined => {
    const jwks = fetched.jwks
    if (!jwks) return undefined
    if (stale?.jwks !== jwks) stale = { jwks, resolver: createLocalJWKSet(jwks) }
    return stale.resolver
  }

  const getKey = (async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    if (performance.now() - failedAt < cooldownMs) {
      const fallback = staleResolver()
      if (fallback) return fallback(header, token)
      // No keys yet and the last fetch failed: jose would fetch again for every token (its cooldown
      // only spaces refetches once it has a set), so the failure is answered again until the cooldown ends.
      if (lastFailure) throw lastFailure
    }
    try {
      return await remote(header, token)
    } catch (err) {
      if (!isFetchFailure(err)) throw err
      failedAt = performance.now()
      const fallback = staleResolver()
      if (fallback) return fallback(header, token)
      lastFailure = new JwksUnavailableError(err, err instanceof errors.JWKSTimeout)
      throw lastFailure
    }
  }) as KeyResolver

  let loading: Promise<boolean> | undefined
  const load = (): Promise<boolean> => {
    if (fetched.jwks !== undefined) return Promise.resolve(true)
    loading ??= remote.reload().then(
      () => {
        loading = undefined
        return fetched.jwks !== undefined
      },
      () => {
        loading = undefined
        return false
      },
    )
    return loading
  }

  return { getKey, current: () => fetched.jwks, fresh: () => remote.fresh, load }
}
