import { createRequire } from 'node:module'
import type { Redis } from 'ioredis'
import type { RedisSettings } from './config.ts'
import { emissionIntervalMs, type RateLimitPolicy } from './policy.ts'
import { GCRA_SCRIPT, GCRA_SCRIPT_SHA } from './redis-script.ts'
import type { Decision, RateLimitStore, StoreStatus } from './store.ts'

// ioredis and its dependencies are about 25 MB of resident memory: loaded only when a Redis store
// is actually configured, not by every process that imports the limiter.
const requireModule = createRequire(import.meta.url)
const loadRedis = (): typeof Redis => (requireModule('ioredis') as { Redis: typeof Redis }).Redis

export interface RedisStoreOptions {
  /** Called for connection-level errors (ioredis 'error' events); decisions reject separately. */
  onConnectionError?: (err: Error) => void
}

/**
 * ioredis options for a store that must never make a request wait (ioredis's defaults
 * queue commands while Redis is down and retry them 20 times):
 * - no offline queue and no per-command retries: while disconnected a decision fails at once;
 * - commandTimeout: a slow or stopped Redis costs at most the timeout;
 * - socketTimeout: a connection that stops answering is dropped instead of piling up commands;
 * - retryStrategy: reconnect forever, at most a second apart, so limiting resumes on its own;
 * - RESP2: every Redis and Valkey speaks it (ioredis 6 defaults to HELLO 3, unknown before Redis 6).
 */
export function redisClientOptions(timeoutMs: number) {
  return {
    protocol: 2 as const,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    socketTimeout: Math.max(2000, timeoutMs * 10),
    connectTimeout: Math.max(2000, timeoutMs * 10),
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
    // After a failover the old primary answers READONLY: reconnect to find the new one.
    reconnectOnError: (err: Error) => err.message.startsWith('READONLY'),
    connectionName: 'authgate-ratelimit',
  }
}

export class RedisStore implements RateLimitStore {
  readonly client: Redis
  readonly #keyPrefix: string

  constructor(settings: RedisSettings, options: RedisStoreOptions = {}) {
    this.#keyPrefix = settings.keyPrefix
    this.client = new (loadRedis())(settings.url, redisClientOptions(settings.timeoutMs))
    // Without a listener ioredis prints every reconnect failure to stderr.
    this.client.on('error', (err: Error) => options.onConnectionError?.(err))
  }

  /** Resolves true once connected, false after `timeoutMs` (decisions then follow the failure policy). */
  ready(timeoutMs: number): Promise<boolean> {
    if (this.client.status === 'ready') return Promise.resolve(true)
    return new Promise((resolve) => {
      const finish = (ok: boolean) => {
        clearTimeout(timer)
        this.client.off('ready', onReady)
        resolve(ok)
      }
      const onReady = () => finish(true)
      const timer = setTimeout(() => finish(false), timeoutMs)
      this.client.on('ready', onReady)
    })
  }

  status(): StoreStatus {
    return this.client.status === 'ready' ? 'up' : 'down'
  }

  onStatusChange(listener: (status: StoreStatus) => void): () => void {
    const update = () => listener(this.status())
    const events = ['ready', 'close', 'end'] as const
    for (const event of events) this.client.on(event, update)
    return () => {
      for (const event of events) this.client.off(event, update)
    }
  }

  async take(key: string, policy: RateLimitPolicy): Promise<Decision> {
    const args = [this.#keyPrefix + key, emissionIntervalMs(policy) * 1000, policy.burst] as const
    let reply: unknown
    try {
      reply = await this.client.evalsha(GCRA_SCRIPT_SHA, 1, ...args)
    } catch (err) {
      // The script cache is empty after a restart, failover or SCRIPT FLUSH: EVAL also reloads it.
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err
      reply = await this.client.eval(GCRA_SCRIPT, 1, ...args)
    }
    return toDecision(reply)
  }

  async close(): Promise<void> {
    if (this.client.status === 'ready') {
      try {
        await this.client.quit()
        return
      } catch {
        // fall through: drop the connection without waiting
      }
    }
    this.client.disconnect()
  }
}

function toDecision(reply: unknown): Decision {
  if (!Array.isArray(reply) || reply.length !== 4 || !reply.every((n) => typeof n === 'number')) {
    throw new Error(`unexpected rate-limit script reply: ${JSON.stringify(reply)}`)
  }
  const [allowed, remaining, retryUs, resetUs] = reply as number[]
  return { allowed: allowed === 1, remaining: remaining!, retryAfterMs: retryUs! / 1000, resetMs: resetUs! / 1000 }
}
