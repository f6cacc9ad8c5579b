import type { Cluster, Redis } from 'ioredis'
import { RedisConnection, type RedisSettings } from '../../core/redis.ts'

/**
 * Which Supabase Auth client stands for which client ID metadata document. Kept where every
 * replica finds it, and across restarts when it is Redis: a second registration for the same URL
 * would be a client the user never consented to, and the first client's refresh tokens would no
 * longer be asked for.
 */

/** The backend client registered for a document, with what it was registered with. */
export interface ClientRecord {
  /** Supabase Auth's client id (a UUID). */
  id: string
  redirectUris: string[]
  clientName: string | undefined
}

/**
 * How long the store keeps things: a mapping unused this long is forgotten (its document, asked
 * again, registers a new client), each use keeps it another `unusedMs`; a client a document's
 * change replaced stays refused `replacedMs` after the change.
 */
export interface StoreLifetimes {
  unusedMs: number
  replacedMs: number
}

/** 30 days unused; a replaced client refused for a year (docs/decisions.md, D134). */
export const DEFAULT_LIFETIMES: StoreLifetimes = { unusedMs: 30 * 86_400_000, replacedMs: 365 * 86_400_000 }

/** How many backend clients may be registered for documents, per document origin and in all, per window. */
export interface RegistrationQuota {
  perOrigin: number
  total: number
  windowMs: number
}

export const DEFAULT_QUOTA: RegistrationQuota = { perOrigin: 10, total: 100, windowMs: 3_600_000 }

export interface ClientIdStore {
  /** The client registered for a document's URL; a use: the mapping is kept longer. */
  byUrl(url: string): Promise<ClientRecord | undefined>
  /** The document's URL of a backend client id, including clients a document's change replaced. */
  urlOf(id: string): Promise<string | undefined>
  /** Whether the backend client was registered for a document and replaced since (refused). */
  isReplaced(id: string): Promise<boolean>
  /**
   * Records `next` for `url` unless another replica recorded a different client since `expected`
   * was read (undefined: none was; a record gone since counts as none): the record that stands
   * afterwards is returned. The client it replaces is marked replaced.
   */
  replace(url: string, expected: ClientRecord | undefined, next: ClientRecord): Promise<ClientRecord>
  /**
   * Takes one registration of the quota for a document of `origin`: false (nothing taken) when the
   * origin's share or the total is spent for the window.
   */
  admitRegistration(origin: string): Promise<boolean>
  ready(timeoutMs: number): Promise<boolean>
  close(): Promise<void>
}

/** A map whose entries expire and whose oldest-used entry goes first past `max`. */
class ExpiringMap<V> {
  readonly #entries = new Map<string, { value: V; until: number }>()
  readonly max: number
  readonly now: () => number
  constructor(max: number, now: () => number) {
    this.max = max
    this.now = now
  }
  get(key: string, refreshMs?: number): V | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    this.#entries.delete(key)
    if (entry.until <= this.now()) return undefined
    if (refreshMs !== undefined) entry.until = this.now() + refreshMs
    this.#entries.set(key, entry)
    return entry.value
  }
  set(key: string, value: V, ttlMs: number): void {
    this.#entries.delete(key)
    this.#entries.set(key, { value, until: this.now() + ttlMs })
    if (this.#entries.size > this.max) this.#entries.delete(this.#entries.keys().next().value!)
  }
  get size(): number {
    return this.#entries.size
  }
}

export interface MemoryStoreOptions {
  lifetimes?: StoreLifetimes
  quota?: RegistrationQuota
  /** Mappings kept at most (the least recently used goes first). */
  maxEntries?: number
  now?: () => number
}

export class MemoryClientIdStore implements ClientIdStore {
  readonly #byUrl: ExpiringMap<ClientRecord>
  readonly #urls: ExpiringMap<string>
  readonly #replaced: ExpiringMap<true>
  readonly #windows = new Map<string, { count: number; until: number }>()
  readonly #lifetimes: StoreLifetimes
  readonly #quota: RegistrationQuota
  readonly #now: () => number
  readonly #maxEntries: number

  constructor(options: MemoryStoreOptions = {}) {
    const now = options.now ?? Date.now
    const max = options.maxEntries ?? 10_000
    this.#lifetimes = options.lifetimes ?? DEFAULT_LIFETIMES
    this.#quota = options.quota ?? DEFAULT_QUOTA
    this.#byUrl = new ExpiringMap(max, now)
    this.#urls = new ExpiringMap(max * 2, now)
    this.#replaced = new ExpiringMap(max, now)
    this.#now = now
    this.#maxEntries = max
  }

  /** Mappings held (document URLs), for tests of the bound. */
  get size(): number {
    return this.#byUrl.size
  }
  async byUrl(url: string) {
    const record = this.#byUrl.get(url, this.#lifetimes.unusedMs)
    if (record !== undefined) this.#urls.get(record.id, this.#lifetimes.unusedMs)
    return record
  }
  async urlOf(id: string) {
    return this.#urls.get(id)
  }
  async isReplaced(id: string) {
    return this.#replaced.get(id) === true
  }
  async replace(url: string, expected: ClientRecord | undefined, next: ClientRecord) {
    const current = this.#byUrl.get(url)
    if (current !== undefined && current.id !== expected?.id) return current
    this.#byUrl.set(url, next, this.#lifetimes.unusedMs)
    this.#urls.set(next.id, url, this.#lifetimes.unusedMs)
    if (current !== undefined) {
      this.#replaced.set(current.id, true, this.#lifetimes.replacedMs)
      this.#urls.set(current.id, url, this.#lifetimes.replacedMs)
    }
    return next
  }
  async admitRegistration(origin: string) {
    const { perOrigin, total, windowMs } = this.#quota
    const now = this.#now()
    const count = (key: string) => {
      const w = this.#windows.get(key)
      return w === undefined || w.until <= now ? 0 : w.count
    }
    const originKey = `origin:${origin}`
    if (count(originKey) >= perOrigin || count('total') >= total) return false
    // Fixed windows from the first registration in each, as the Redis store counts them.
    for (const key of [originKey, 'total']) {
      const w = this.#windows.get(key)
      if (w === undefined || w.until <= now) this.#windows.set(key, { count: 1, until: now + windowMs })
      else w.count++
    }
    if (this.#windows.size > this.#maxEntries)
      for (const [key, w] of this.#windows)
        if (w.until <= now || this.#windows.size > this.#maxEntries) this.#windows.delete(key)
    return true
  }
  async ready() {
    return true
  }
  async close() {}
}

// Sets the record only while it is still the one read (or absent, when none was read), in one step:
// two replicas registering for the same document agree on one client. The id's reverse entry is
// written in the same call, and the client replaced is marked so (keys of their own under the same
// hash tag: a Cluster keeps them all on one slot). Every key expires; a use extends it (BY_URL).
const REPLACE = `
local current = redis.call('GET', KEYS[1])
local id = ''
if current then id = cjson.decode(current).id end
if current and id ~= ARGV[1] then return current end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[4])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
if current and id ~= cjson.decode(ARGV[2]).id then
  redis.call('SET', ARGV[6] .. 'gone:' .. id, '1', 'PX', ARGV[5])
  redis.call('SET', ARGV[6] .. 'id:' .. id, ARGV[3], 'PX', ARGV[5])
end
return ARGV[2]`

// A mapping read is a use: it and its id's reverse entry are kept another lifetime.
const BY_URL = `
local raw = redis.call('GET', KEYS[1])
if raw then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', ARGV[2] .. 'id:' .. cjson.decode(raw).id, ARGV[1])
end
return raw`

// One registration of the quota: the origin's window and the total's, both or neither.
const ADMIT = `
local mine = tonumber(redis.call('GET', KEYS[1]) or '0')
local all = tonumber(redis.call('GET', KEYS[2]) or '0')
if mine >= tonumber(ARGV[1]) or all >= tonumber(ARGV[2]) then return 0 end
if redis.call('INCR', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
if redis.call('INCR', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return 1`

export interface RedisStoreOptions {
  onConnectionError?: (err: Error) => void
  lifetimes?: StoreLifetimes
  quota?: RegistrationQuota
}

export class RedisClientIdStore implements ClientIdStore {
  readonly client: Redis | Cluster
  readonly #connection: RedisConnection
  readonly #prefix: string
  readonly #lifetimes: StoreLifetimes
  readonly #quota: RegistrationQuota

  constructor(settings: RedisSettings, options: RedisStoreOptions = {}) {
    this.#prefix = `${settings.keyPrefix}client-metadata:{clients}:`
    this.#lifetimes = options.lifetimes ?? DEFAULT_LIFETIMES
    this.#quota = options.quota ?? DEFAULT_QUOTA
    this.#connection = new RedisConnection(settings, {
      connectionName: 'authgate-client-metadata',
      onConnectionError: options.onConnectionError,
    })
    this.client = this.#connection.client
  }

  async byUrl(url: string) {
    const raw = (await this.client.eval(
      BY_URL,
      1,
      `${this.#prefix}url:${url}`,
      this.#lifetimes.unusedMs,
      this.#prefix,
    )) as string | null
    return raw === null ? undefined : (JSON.parse(raw) as ClientRecord)
  }
  async urlOf(id: string) {
    return (await this.client.get(`${this.#prefix}id:${id}`)) ?? undefined
  }
  async isReplaced(id: string) {
    return (await this.client.exists(`${this.#prefix}gone:${id}`)) === 1
  }
  async replace(url: string, expected: ClientRecord | undefined, next: ClientRecord) {
    const stood = (await this.client.eval(
      REPLACE,
      2,
      `${this.#prefix}url:${url}`,
      `${this.#prefix}id:${next.id}`,
      expected?.id ?? '',
      JSON.stringify(next),
      url,
      this.#lifetimes.unusedMs,
      this.#lifetimes.replacedMs,
      this.#prefix,
    )) as string
    return JSON.parse(stood) as ClientRecord
  }
  async admitRegistration(origin: string) {
    const { perOrigin, total, windowMs } = this.#quota
    const admitted = await this.client.eval(
      ADMIT,
      2,
      `${this.#prefix}reg:origin:${origin}`,
      `${this.#prefix}reg:total`,
      perOrigin,
      total,
      windowMs,
    )
    return admitted === 1
  }
  ready(timeoutMs: number) {
    return this.#connection.connected(timeoutMs)
  }
  close() {
    return this.#connection.close()
  }
}
