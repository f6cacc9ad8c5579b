import type { Cluster, Redis } from 'ioredis'
import { RedisConnection, type RedisSettings } from '../core/redis.ts'
import { emissionIntervalMs, type RateLimitPolicy } from './policy.ts'
import { DenyCache } from './deny-cache.ts'
import { GCRA_SCRIPT, GCRA_SCRIPT_SHA, REFUND_SCRIPT } from './redis-script.ts'
import type { Decision, RateLimitStore, StoreStatus } from './store.ts'

export interface RedisStoreOptions {
  /** Called for connection-level errors (ioredis 'error' events); decisions reject separately. */
  onConnectionError?: (err: Error) => void
  /** Where refusals are remembered between round trips (a fresh one by default; tests give a clock). */
  denyCache?: DenyCache
}

/**
 * The GCRA script touches one key (KEYS[1]), so in a Cluster each decision is one Lua call on the
 * node owning that key's slot; no hash tag is needed. A command is bounded by `commandTimeout`; the
 * whole decision (a Cluster's redirections and retries included) by `timeoutMs` as well.
 */
export class RedisStore implements RateLimitStore {
  readonly client: Redis | Cluster
  readonly #connection: RedisConnection
  readonly #keyPrefix: string
  readonly #timeoutMs: number
  readonly #denials: DenyCache

  constructor(settings: RedisSettings, options: RedisStoreOptions = {}) {
    this.#keyPrefix = settings.keyPrefix
    this.#timeoutMs = settings.timeoutMs
    this.#denials = options.denyCache ?? new DenyCache()
    this.#connection = new RedisConnection(settings, {
      connectionName: 'authgate-ratelimit',
      onConnectionError: options.onConnectionError,
    })
    this.client = this.#connection.client
    // After a restart or failover the server's script cache is empty, and the first decision would
    // spend its timeout on NOSCRIPT and a compiling EVAL: the script is loaded as soon as the
    // connection is ready, ahead of any decision on it, so each decision stays one round trip.
    this.client.on('ready', () => void this.#loadScript())
  }

  /** SCRIPT LOAD on the server (each primary of a Cluster); settles when done or failed. */
  #loadScript(): Promise<unknown> {
    const targets = 'nodes' in this.client ? this.client.nodes('master') : [this.client]
    return Promise.allSettled(targets.map((node) => node.script('LOAD', GCRA_SCRIPT)))
  }

  /** Resolves true once connected, false after `timeoutMs` (decisions then follow the failure policy). */
  async ready(timeoutMs: number): Promise<boolean> {
    const connected = await this.#connection.connected(timeoutMs)
    if (connected && 'nodes' in this.client) {
      // A Cluster opens each node's connection on its first command: waited for now, so the first
      // decisions do not spend their timeout on it.
      await Promise.race([this.#loadScript(), new Promise((r) => setTimeout(r, timeoutMs).unref())])
    }
    return connected
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

  cachedDenial(key: string): Decision | undefined {
    return this.#denials.get(key)
  }

  take(key: string, policy: RateLimitPolicy): Promise<Decision> {
    const known = this.#denials.get(key)
    if (known !== undefined) return Promise.resolve(known)
    const askedAt = this.#denials.now()
    return this.#inTime(this.#take(key, policy)).then((decision) => {
      this.#denials.remember(key, decision, askedAt)
      return decision
    })
  }

  /**
   * A refund is rare (a sign-in Supabase Auth accepted), so plain EVAL, with no script cache to
   * keep warm; bounded by the same timeout as a decision. A refusal this replica remembered for the
   * key is forgotten: the bucket has room again.
   */
  refund(key: string, policy: RateLimitPolicy): Promise<void> {
    this.#denials.forget(key)
    const done = this.client.eval(REFUND_SCRIPT, 1, this.#keyPrefix + key, emissionIntervalMs(policy) * 1000)
    return this.#inTime(done.then(() => undefined))
  }

  #inTime<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('rate-limit store: no decision in time')), this.#timeoutMs)
      work.then(
        (d) => {
          clearTimeout(timer)
          resolve(d)
        },
        (err: unknown) => {
          clearTimeout(timer)
          reject(err as Error)
        },
      )
    })
  }

  async #take(key: string, policy: RateLimitPolicy): Promise<Decision> {
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

  close(): Promise<void> {
    return this.#connection.close()
  }
}

function toDecision(reply: unknown): Decision {
  if (!Array.isArray(reply) || reply.length !== 4 || !reply.every((n) => typeof n === 'number')) {
    throw new Error(`unexpected rate-limit script reply: ${JSON.stringify(reply)}`)
  }
  const [allowed, remaining, retryUs, resetUs] = reply as number[]
  return { allowed: allowed === 1, remaining: remaining!, retryAfterMs: retryUs! / 1000, resetMs: resetUs! / 1000 }
}
