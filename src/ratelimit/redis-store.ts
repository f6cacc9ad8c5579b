import { createRequire } from 'node:module'
import type { Cluster, Redis } from 'ioredis'
import type { RedisSettings } from './config.ts'
import { emissionIntervalMs, type RateLimitPolicy } from './policy.ts'
import { GCRA_SCRIPT, GCRA_SCRIPT_SHA, REFUND_SCRIPT } from './redis-script.ts'
import { parseRedisUrl } from './redis-url.ts'
import type { Decision, RateLimitStore, StoreStatus } from './store.ts'

// ioredis and its dependencies are about 25 MB of resident memory: loaded only when a Redis store
// is actually configured, not by every process that imports the limiter.
const requireModule = createRequire(import.meta.url)
const loadIoredis = () => requireModule('ioredis') as { Redis: typeof Redis; Cluster: typeof Cluster }

/** True once the client is connected, false if it is not within `timeoutMs`. */
export function redisConnected(client: Redis | Cluster, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true)
  return new Promise((resolve) => {
    const finish = (ok: boolean) => {
      clearTimeout(timer)
      client.off('ready', onReady)
      resolve(ok)
    }
    const onReady = () => finish(true)
    const timer = setTimeout(() => finish(false), timeoutMs)
    client.on('ready', onReady)
  })
}

/** Ends a client: QUIT when it is connected (pending replies first), else drops the connection at once. */
export async function closeRedisClient(client: Redis | Cluster): Promise<void> {
  if (client.status === 'ready') {
    try {
      await client.quit()
      return
    } catch {
      // fall through: drop the connection without waiting
    }
  }
  client.disconnect()
}

/**
 * The ioredis client for the configured deployment: one server, Sentinel or Cluster (ioredis's own
 * support for each). The rate limiter and the cookie-session store (src/sessions/) both connect here.
 */
export function createRedisClient(settings: RedisSettings, connectionName = 'authgate-ratelimit'): Redis | Cluster {
  const { Redis, Cluster } = loadIoredis()
  const target = parseRedisUrl(settings.url)
  const options = redisClientOptions(settings.timeoutMs, connectionName)
  // Node.js's default trust, or only the configured CA.
  const tls = settings.tlsCa !== undefined ? { ca: settings.tlsCa } : {}
  if (target.kind === 'single') return new Redis(settings.url, target.tls ? { ...options, tls } : options)
  const credentials = {
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
  }
  if (target.kind === 'sentinel') {
    return new Redis({
      ...options,
      ...credentials,
      sentinels: target.sentinels,
      name: target.name,
      db: target.db,
      ...(settings.sentinelPassword !== undefined ? { sentinelPassword: settings.sentinelPassword } : {}),
      ...(target.tls ? { tls, sentinelTLS: tls, enableTLSForSentinelMode: true } : {}),
      // Not ioredis's failoverDetector: its announcement can arrive while the client is already
      // reconnecting (the primary died first) and then ends the client for good. A dead primary
      // closes the connection, a demoted one answers READONLY; either way the client asks the
      // sentinels again, at most a second apart, and finds the promoted replica.
      sentinelRetryStrategy: options.retryStrategy,
      sentinelCommandTimeout: Math.max(500, settings.timeoutMs * 5),
    })
  }
  // Per node, ioredis's own choices stay: a connection opens on its first command (so its offline
  // queue stays on; the decision's deadline still bounds the wait), and a lost node is not
  // redialled but replaced through the slot map. READONLY is the Cluster's to handle.
  const { retryStrategy, reconnectOnError, enableOfflineQueue, ...nodeOptions } = options
  void reconnectOnError
  void enableOfflineQueue
  return new Cluster(target.nodes, {
    redisOptions: { ...nodeOptions, ...credentials, ...(target.tls ? { tls } : {}) },
    // While the cluster is not ready a decision fails at once (the failure policy applies).
    enableOfflineQueue: false,
    enableReadyCheck: true,
    clusterRetryStrategy: retryStrategy,
    scaleReads: 'master',
    slotsRefreshTimeout: Math.max(1000, settings.timeoutMs * 10),
    // A MOVED or ASK redirection (slot migration, failover) is followed, within the request's
    // own deadline (the store's `take` races the timeout).
    retryDelayOnFailover: 50,
    retryDelayOnClusterDown: 50,
    retryDelayOnTryAgain: 50,
  })
}

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
export function redisClientOptions(timeoutMs: number, connectionName = 'authgate-ratelimit') {
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
    connectionName,
  }
}

/**
 * The GCRA script touches one key (KEYS[1]), so in a Cluster each decision is one Lua call on the
 * node owning that key's slot; no hash tag is needed. A command is bounded by `commandTimeout`; the
 * whole decision (a Cluster's redirections and retries included) by `timeoutMs` as well.
 */
export class RedisStore implements RateLimitStore {
  readonly client: Redis | Cluster
  readonly #keyPrefix: string
  readonly #timeoutMs: number
  #closing = false

  constructor(settings: RedisSettings, options: RedisStoreOptions = {}) {
    this.#keyPrefix = settings.keyPrefix
    this.#timeoutMs = settings.timeoutMs
    this.client = createRedisClient(settings)
    // ioredis ends a client for good in a few races (a reconnect cut short by a failover); a
    // limiter must never stay off until a restart, so an end it did not ask for starts over.
    this.client.on('end', () => {
      if (this.#closing) return
      setTimeout(() => {
        if (!this.#closing && this.client.status === 'end') this.client.connect().catch(() => undefined)
      }, 1000).unref()
    })
    // Without a listener ioredis prints every reconnect failure to stderr.
    this.client.on('error', (err: Error) => options.onConnectionError?.(explainConnectionError(err)))
  }

  /** Resolves true once connected, false after `timeoutMs` (decisions then follow the failure policy). */
  async ready(timeoutMs: number): Promise<boolean> {
    const connected = await redisConnected(this.client, timeoutMs)
    if (connected && 'nodes' in this.client) {
      // A Cluster opens each node's connection on its first command, and each node's script cache
      // starts empty: both done now, so the first decisions do not spend their timeout on them.
      const primaries = this.client.nodes('master')
      const warm = Promise.allSettled(primaries.map((node) => node.script('LOAD', GCRA_SCRIPT)))
      await Promise.race([warm, new Promise((r) => setTimeout(r, timeoutMs).unref())])
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

  take(key: string, policy: RateLimitPolicy): Promise<Decision> {
    return this.#inTime(this.#take(key, policy))
  }

  /**
   * A refund is rare (a sign-in Supabase Auth accepted), so plain EVAL, with no script cache to
   * keep warm; bounded by the same timeout as a decision.
   */
  refund(key: string, policy: RateLimitPolicy): Promise<void> {
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

  async close(): Promise<void> {
    this.#closing = true
    await closeRedisClient(this.client)
  }
}

// Node.js's codes for a server certificate it does not accept (tls.connect's verification).
const CERTIFICATE_ERRORS = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

/**
 * A refused server certificate says what to check: otherwise the log shows only OpenSSL's words
 * and the operator has to guess which setting is involved.
 */
export function explainConnectionError(err: Error): Error {
  const code = (err as { code?: unknown }).code
  if (typeof code !== 'string' || !CERTIFICATE_ERRORS.has(code)) return err
  return new Error(
    `Redis TLS: the server certificate is not accepted (${code}: ${err.message}); ` +
      'AUTHGATE_REDIS_TLS_CA must hold the CA that signed it, and the certificate must name the host of AUTHGATE_REDIS_URL',
  )
}

function toDecision(reply: unknown): Decision {
  if (!Array.isArray(reply) || reply.length !== 4 || !reply.every((n) => typeof n === 'number')) {
    throw new Error(`unexpected rate-limit script reply: ${JSON.stringify(reply)}`)
  }
  const [allowed, remaining, retryUs, resetUs] = reply as number[]
  return { allowed: allowed === 1, remaining: remaining!, retryAfterMs: retryUs! / 1000, resetMs: resetUs! / 1000 }
}
