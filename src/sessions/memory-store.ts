import { randomBytes } from 'node:crypto'
import type { SessionStore } from './store.ts'

interface Entry {
  sealed: string
  expiresAt: number
}

/**
 * Sessions in this process: lost on restart and not shared with other replicas (use Redis for
 * those). Bounded: past `maxEntries` the least recently written session is dropped.
 */
export class MemorySessionStore implements SessionStore {
  readonly #entries = new Map<string, Entry>()
  readonly #locks = new Map<string, { token: string; until: number }>()
  readonly #max: number
  readonly #now: () => number

  constructor(options: { maxEntries?: number; now?: () => number } = {}) {
    this.#max = options.maxEntries ?? 100_000
    this.#now = options.now ?? Date.now
  }

  get size(): number {
    return this.#entries.size
  }

  async get(handle: string): Promise<string | undefined> {
    const entry = this.#entries.get(handle)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= this.#now()) {
      this.#entries.delete(handle)
      return undefined
    }
    return entry.sealed
  }

  async set(handle: string, sealed: string, ttlMs: number): Promise<void> {
    this.#entries.delete(handle)
    if (this.#entries.size >= this.#max) this.#entries.delete(this.#entries.keys().next().value!)
    this.#entries.set(handle, { sealed, expiresAt: this.#now() + ttlMs })
  }

  async touch(handle: string, ttlMs: number): Promise<void> {
    const entry = this.#entries.get(handle)
    if (entry !== undefined) entry.expiresAt = this.#now() + ttlMs
  }

  async delete(handle: string): Promise<void> {
    this.#entries.delete(handle)
  }

  async lock(handle: string, ttlMs: number): Promise<string | undefined> {
    const held = this.#locks.get(handle)
    if (held !== undefined && held.until > this.#now()) return undefined
    const token = randomBytes(12).toString('base64url')
    this.#locks.set(handle, { token, until: this.#now() + ttlMs })
    return token
  }

  async unlock(handle: string, token: string): Promise<void> {
    if (this.#locks.get(handle)?.token === token) this.#locks.delete(handle)
  }

  async renew(handle: string, token: string, ttlMs: number): Promise<boolean> {
    const held = this.#locks.get(handle)
    if (held === undefined || held.token !== token || held.until <= this.#now()) return false
    held.until = this.#now() + ttlMs
    return true
  }

  async ready(): Promise<boolean> {
    return true
  }

  async close(): Promise<void> {
    this.#entries.clear()
    this.#locks.clear()
  }
}
