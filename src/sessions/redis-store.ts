import { randomBytes } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { RedisConnection, type RedisSettings } from '../core/redis.ts'
import type { SessionStore } from './store.ts'

// Deletes the lock only while it is still ours: a lock that expired and was taken by another
// replica must not be released by the late first holder.
const UNLOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// Extends the lock only while it is still ours, for the same reason.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`

/**
 * Sessions in Redis (one server, Sentinel or Cluster, through the connection src/core/redis.ts makes):
 * every replica serves every session, and a restart loses none. Record and lock are separate keys
 * (`<prefix><handle>`, `<prefix>lock:<handle>`), so no command spans two slots.
 */
export class RedisSessionStore implements SessionStore {
  readonly client: Redis | Cluster
  readonly #connection: RedisConnection
  readonly #prefix: string

  constructor(settings: RedisSettings, options: { onConnectionError?: (err: Error) => void } = {}) {
    this.#prefix = settings.keyPrefix
    this.#connection = new RedisConnection(settings, {
      connectionName: 'authgate-sessions',
      onConnectionError: options.onConnectionError,
    })
    this.client = this.#connection.client
  }

  async get(handle: string): Promise<string | undefined> {
    return (await this.client.get(this.#prefix + handle)) ?? undefined
  }

  async set(handle: string, sealed: string, ttlMs: number): Promise<void> {
    await this.client.set(this.#prefix + handle, sealed, 'PX', Math.max(1, Math.round(ttlMs)))
  }

  async touch(handle: string, ttlMs: number): Promise<void> {
    await this.client.pexpire(this.#prefix + handle, Math.max(1, Math.round(ttlMs)))
  }

  async delete(handle: string): Promise<void> {
    await this.client.del(this.#prefix + handle)
  }

  async lock(handle: string, ttlMs: number): Promise<string | undefined> {
    const token = randomBytes(12).toString('base64url')
    const ok = await this.client.set(`${this.#prefix}lock:${handle}`, token, 'PX', Math.round(ttlMs), 'NX')
    return ok === 'OK' ? token : undefined
  }

  async unlock(handle: string, token: string): Promise<void> {
    await this.client.eval(UNLOCK, 1, `${this.#prefix}lock:${handle}`, token)
  }

  async renew(handle: string, token: string, ttlMs: number): Promise<boolean> {
    const renewed = await this.client.eval(RENEW, 1, `${this.#prefix}lock:${handle}`, token, Math.round(ttlMs))
    return renewed === 1
  }

  ready(timeoutMs: number): Promise<boolean> {
    return this.#connection.connected(timeoutMs)
  }

  close(): Promise<void> {
    return this.#connection.close()
  }
}
