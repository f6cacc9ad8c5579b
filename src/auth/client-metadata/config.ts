import { readFileSync } from 'node:fs'
import { parseOrigins } from '../../config.ts'
import { AuthgateConfigError, envValue, isOff, type Env } from '../../config/env.ts'
import { refuseUnknownOptions } from '../../config/known-options.ts'
import { settingValue } from '../../config/schema.ts'
import { duration, list, size, text, type SettingValue } from '../../config/values.ts'
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

const originList = list(parseOrigins)

/** Origins documents are fetched from (https only), or `any`. */
const documentOrigins: SettingValue<'any' | readonly string[]> = {
  parse: (variable, raw) =>
    raw.trim().toLowerCase() === 'any' ? 'any' : httpsOnly(variable, parseOrigins(variable, raw)),
  check: (name, v) => (v === 'any' ? 'any' : httpsOnly(name, originList.check(name, v))),
}

function httpsOnly(name: string, origins: readonly string[]): readonly string[] {
  for (const o of origins)
    if (!o.startsWith('https://'))
      throw new AuthgateConfigError(name, `documents are fetched over https only, got ${o}`)
  return origins
}

/**
 * One value type per option (src/config/values.ts): the environment's reader parses the variables
 * with them (origins, private origins), and the resolver checks what code gives with them.
 */
const VALUES: { readonly [K in Exclude<keyof ClientMetadataOptions, 'store'>]-?: SettingValue<unknown> } = {
  origins: documentOrigins,
  privateOrigins: originList,
  ca: text,
  maxBytes: size,
  timeoutMs: duration(),
  defaultFreshMs: duration(),
  maxFreshMs: duration(),
}

export function resolveClientMetadataConfig(options: ClientMetadataOptions): ClientMetadataConfig {
  refuseUnknownOptions(options, [...Object.keys(VALUES), 'store'], 'clientMetadata.')
  // The store's shape is the type's to check (tests build it).
  for (const [key, value] of Object.entries(options))
    if (key !== 'store' && (value !== undefined || key === 'origins'))
      VALUES[key as keyof typeof VALUES].check(`clientMetadata.${key}`, value)
  return {
    origins: options.origins,
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
  const raw = settingValue(env, 'AUTHGATE_OAUTH_CLIENT_METADATA')!
  if (isOff(raw)) return undefined
  const origins = documentOrigins.parse('AUTHGATE_OAUTH_CLIENT_METADATA', raw)
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
      ? { privateOrigins: originList.parse('AUTHGATE_OAUTH_CLIENT_METADATA_PRIVATE_ORIGINS', privateRaw) }
      : {}),
    ...(ca !== undefined ? { ca } : {}),
    store: redis ? { kind: 'redis', ...redis } : { kind: 'memory' },
  })
}
