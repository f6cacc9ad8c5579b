import { readFileSync } from 'node:fs'
import { parseOrigins } from '../../config.ts'
import { AuthgateConfigError, envValue, OFF_WORDS, type Env } from '../../config/env.ts'
import { settingValue } from '../../config/schema.ts'
import { loadRedisConnection } from '../../ratelimit/config.ts'
import type { RedisSettings } from '../../core/redis.ts'

/** Client ID metadata documents (docs/mcp.md): what the plugin's `clientMetadata` option takes. */
export interface ClientMetadataOptions {
  /** Origins whose documents are accepted (`https://app.example.com`), or `any` https origin. */
  origins: 'any' | readonly string[]
  /**
   * Origins whose host may resolve to private or loopback addresses: a document server inside the
   * network, or a test's own server. Never needed for public clients.
   */
  privateOrigins?: readonly string[]
  /** PEM of CA certificates trusted for documents besides Node.js's own (an internal or a test CA). */
  ca?: string
  /** Largest document read (default 5 KiB, the draft's suggestion). */
  maxBytes?: number
  /** Longest a fetch takes (default 5 s). */
  timeoutMs?: number
  /** How long a document is reused when its answer says nothing of freshness (default 5 minutes). */
  defaultFreshMs?: number
  /** Longest a document is reused whatever its answer says (default 24 hours). */
  maxFreshMs?: number
  /** Where the URL ↔ client mapping lives: Redis (replicas agree, restarts keep it) or this process. */
  store?: { kind: 'memory' } | ({ kind: 'redis' } & RedisSettings)
}

export type ClientMetadataConfig = Required<Omit<ClientMetadataOptions, 'ca'>> & { ca: string | undefined }

export function resolveClientMetadataConfig(options: ClientMetadataOptions): ClientMetadataConfig {
  const origins = options.origins
  if (origins !== 'any')
    for (const o of origins)
      if (!o.startsWith('https://'))
        throw new AuthgateConfigError('clientMetadata.origins', `documents are fetched over https only, got ${o}`)
  return {
    origins,
    privateOrigins: options.privateOrigins ?? [],
    ca: options.ca,
    maxBytes: options.maxBytes ?? 5 * 1024,
    timeoutMs: options.timeoutMs ?? 5000,
    defaultFreshMs: options.defaultFreshMs ?? 5 * 60_000,
    maxFreshMs: options.maxFreshMs ?? 24 * 3_600_000,
    store: options.store ?? { kind: 'memory' },
  }
}

/** The service's settings: AUTHGATE_OAUTH_CLIENT_METADATA and the two that go with it. */
export function loadClientMetadataConfig(env: Env): ClientMetadataConfig | undefined {
  const raw = settingValue(env, 'AUTHGATE_OAUTH_CLIENT_METADATA')!.trim()
  if (OFF_WORDS.has(raw.toLowerCase())) return undefined
  const origins = raw.toLowerCase() === 'any' ? 'any' : parseOrigins('AUTHGATE_OAUTH_CLIENT_METADATA', raw)
  if (origins !== 'any' && origins.some((o) => !o.startsWith('https://')))
    throw new AuthgateConfigError('AUTHGATE_OAUTH_CLIENT_METADATA', 'documents are fetched over https only')
  const privateRaw = envValue(env, 'AUTHGATE_OAUTH_CLIENT_METADATA_PRIVATE_ORIGINS')
  const caPath = envValue(env, 'AUTHGATE_OAUTH_CLIENT_METADATA_CA')
  let ca: string | undefined
  if (caPath !== undefined) {
    try {
      ca = readFileSync(caPath, 'utf8')
    } catch (err) {
      throw new AuthgateConfigError(
        'AUTHGATE_OAUTH_CLIENT_METADATA_CA',
        `cannot read ${caPath}: ${(err as Error).message}`,
      )
    }
  }
  const redis = loadRedisConnection(env)
  return resolveClientMetadataConfig({
    origins,
    ...(privateRaw
      ? { privateOrigins: parseOrigins('AUTHGATE_OAUTH_CLIENT_METADATA_PRIVATE_ORIGINS', privateRaw) }
      : {}),
    ...(ca !== undefined ? { ca } : {}),
    store: redis ? { kind: 'redis', ...redis } : { kind: 'memory' },
  })
}
