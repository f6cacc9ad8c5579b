/**
 * Where sealed session records live, by handle (the hash of the session id). Records arrive
 * encrypted (src/sessions/crypto.ts): a store never sees a token. Each record has a time to live;
 * the refresh lock makes one replica at a time refresh a session's tokens.
 */
export interface SessionStore {
  get(handle: string): Promise<string | undefined>
  set(handle: string, sealed: string, ttlMs: number): Promise<void>
  /** Extends the time to live of a record that is being used (the idle timeout slides). */
  touch(handle: string, ttlMs: number): Promise<void>
  delete(handle: string): Promise<void>
  /** Takes the refresh lock of a session for `ttlMs`: a token to release it with, or undefined when held. */
  lock(handle: string, ttlMs: number): Promise<string | undefined>
  unlock(handle: string, token: string): Promise<void>
  /** Extends a lock still held with `token` to `ttlMs` from now: false when it lapsed or another holds it. */
  renew(handle: string, token: string, ttlMs: number): Promise<boolean>
  /** Resolves once the store can answer (false after `timeoutMs`). */
  ready(timeoutMs: number): Promise<boolean>
  close(): Promise<void>
}
