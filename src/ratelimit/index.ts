export { loadRateLimitConfig, DEFAULT_RATE, type RateLimitConfig, type RedisSettings } from './config.ts'
export {
  createRateLimiter,
  bucketName,
  type RateLimiter,
  type RateLimitHook,
  type EarlyDecider,
  type EarlyRefusal,
  type RawDecider,
  type RawRefusal,
  type RateLimitCounters,
  type RateLimiterOptions,
} from './limiter.ts'
export { MemoryStore, type MemoryStoreOptions } from './memory-store.ts'
export { RedisStore } from './redis-store.ts'
export { parseRate, type RateLimitPolicy } from './policy.ts'
export { policyHeader } from './headers.ts'
export type { Decision, RateLimitStore } from './store.ts'
