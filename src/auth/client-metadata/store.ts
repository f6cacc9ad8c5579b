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

export interface ClientIdStore {
  /** The client registered for a document's URL. */
  byUrl(url: string): Promise<ClientRecord | undefined>
  /** The document's URL of a backend client id, including clients a document's change replaced. */
  urlOf(id: string): Promise<string | undefined>
  /**
   * Records `next` for `url` unless another replica recorded a different client since `expected`
   * was read (undefined: none was; a record gone since counts as none): the record that stands
   * afterwards is returned.
   */
  replace(url: string, expected: ClientRecord | undefined, next: ClientRecord): Promise<ClientRecord>
  ready(timeoutMs: number): Promise<boolean>
  close(): Promise<void>
}

export class MemoryClientIdStore implements ClientIdStore {
  readonly #byUrl = new Map<string, ClientRecord>()
  readonly #urls = new Map<string, string>()

  async byUrl(url: string) {
    return this.#byUrl.get(url)
  }
  async urlOf(id: string) {
    return this.#urls.get(id)
  }
  async replace(url: string, expected: ClientRecord | undefined, next: ClientRecord) {
    const current = this.#byUrl.get(url)
    if (current !== undefined && current.id !== expected?.id) return current
    this.#byUrl.set(url, next)
    this.#urls.set(next.id, url)
    return next
  }
  async ready() {
    return true
  }
  async close() {}
}

// Sets the record only while it is still the one read (or absent, when none was read), in one step:
// two replicas registering for the same document agree on one client. The id's reverse entry is
// written in the same call (its own key; a Cluster keeps both on the key's slot by the hash tag).
const REPLACE = `
local current = redis.call('GET', KEYS[1])
local id = ''
if current then id = cjson.decode(current).id end
if current and id ~= ARGV[1] then return current end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[3])
return ARGV[2]`

export class RedisClientIdStore implements ClientIdStore {
  readonly client: Redis | Cluster
  readonly #connection: RedisConnection
  readonly #prefix: string

  constructor(settings: RedisSettings, options: { onConnectionError?: (err: Error) => void } = {}) {
    this.#prefix = `${settings.keyPrefix}client-metadata:{clients}:`
    this.#connection = new RedisConnection(settings, {
      connectionName: 'authgate-client-metadata',
      onConnectionError: options.onConnectionError,
    })
    this.client = this.#connection.client
  }

  async byUrl(url: string) {
    const raw = await this.client.get(`${this.#prefix}url:${url}`)
    return raw === null ? undefined : (JSON.parse(raw) as ClientRecord)
  }
  async urlOf(id: string) {
    return (await this.client.get(`${this.#prefix}id:${id}`)) ?? undefined
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
    )) as string
    return JSON.parse(stood) as ClientRecord
  }
  ready(timeoutMs: number) {
    return this.#connection.connected(timeoutMs)
  }
  close() {
    return this.#connection.close()
  }
}
