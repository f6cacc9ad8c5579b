import type { FastifyBaseLogger } from 'fastify'
import type { ClientMetadataConfig } from './config.ts'
import { DocumentFetcher } from './fetch.ts'
import { ClientMetadataRegistry, type RegistryBackend } from './registry.ts'
import { MemoryClientIdStore, RedisClientIdStore } from './store.ts'

export { ClientMetadataRegistry } from './registry.ts'
export { loadClientMetadataConfig, resolveClientMetadataConfig } from './config.ts'
export type { ClientMetadataConfig, ClientMetadataOptions } from './config.ts'

/** The registry of a configuration: its fetcher, and the mapping in Redis or in this process. */
export function createClientMetadataRegistry(
  config: ClientMetadataConfig,
  backend: RegistryBackend,
  log: FastifyBaseLogger,
): ClientMetadataRegistry {
  const store =
    config.store.kind === 'redis'
      ? new RedisClientIdStore(config.store, {
          onConnectionError: (err) => log.warn({ err: err.message }, 'client metadata: Redis connection error'),
        })
      : new MemoryClientIdStore()
  return new ClientMetadataRegistry({
    origins: config.origins,
    fetcher: new DocumentFetcher({
      maxBytes: config.maxBytes,
      timeoutMs: config.timeoutMs,
      privateOrigins: config.privateOrigins,
      ca: config.ca,
    }),
    store,
    backend,
    defaultFreshMs: config.defaultFreshMs,
    maxFreshMs: config.maxFreshMs,
  })
}
