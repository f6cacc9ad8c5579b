import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { AuthgateConfigError } from '../config/env.ts'

/** One AES-256 key and the id stored with what it encrypts, so an old key still opens old sessions. */
export interface SessionKey {
  id: string
  key: Buffer
}

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/

/** `k2:<base64>,k1:<base64>`: the first encrypts, all decrypt. */
export function parseSessionKeys(option: string, raw: string): SessionKey[] {
  const out: SessionKey[] = []
  for (const item of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const colon = item.indexOf(':')
    const id = colon < 0 ? '' : item.slice(0, colon)
    // The key itself never appears in a message.
    if (!KEY_ID.test(id))
      throw new AuthgateConfigError(option, 'each key is `<id>:<base64 of 32 bytes>`, the id letters, digits, - or _')
    const key = Buffer.from(item.slice(colon + 1), 'base64')
    if (key.length !== 32) throw new AuthgateConfigError(option, `key ${id} is not 32 bytes of base64`)
    out.push({ id, key })
  }
  if (out.length === 0) throw new AuthgateConfigError(option, 'no key given')
  return out
}

/** A new session id: 32 random bytes, base64url (43 characters), the only thing the browser holds. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url')
}

/** The store's name for a session: the id is never stored, so a read of the store cannot replay one. */
export function sessionHandle(id: string): string {
  return createHash('sha256').update(id).digest('base64url')
}

/** A session id as browsers may send it: exactly what `newSessionId` makes. */
export const SESSION_ID = /^[A-Za-z0-9_-]{43}$/

/**
 * AES-256-GCM over the session record, bound to the session's handle as additional data (a record
 * copied under another handle does not open). Sealed form: `<key id>.<iv>.<ciphertext + tag>`,
 * base64url parts.
 */
export class SessionCipher {
  readonly #current: SessionKey
  readonly #byId: Map<string, Buffer>

  constructor(keys: readonly SessionKey[]) {
    if (keys.length === 0) throw new TypeError('SessionCipher needs a key')
    this.#current = keys[0]!
    this.#byId = new Map(keys.map((k) => [k.id, k.key]))
  }

  seal(plain: string, handle: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#current.key, iv)
    cipher.setAAD(Buffer.from(handle))
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return `${this.#current.id}.${iv.toString('base64url')}.${body.toString('base64url')}`
  }

  /** The plain text, or undefined when the key is unknown (rotated out) or the record was altered. */
  open(sealed: string, handle: string): string | undefined {
    const [id, ivText, bodyText, extra] = sealed.split('.')
    if (extra !== undefined || id === undefined || ivText === undefined || bodyText === undefined) return undefined
    const key = this.#byId.get(id)
    if (key === undefined) return undefined
    const iv = Buffer.from(ivText, 'base64url')
    const body = Buffer.from(bodyText, 'base64url')
    if (iv.length !== 12 || body.length < 16) return undefined
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv)
      decipher.setAAD(Buffer.from(handle))
      decipher.setAuthTag(body.subarray(body.length - 16))
      return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8')
    } catch {
      return undefined
    }
  }

  /** Whether a record was sealed with an older key (it is sealed again with the current one on its next write). */
  isCurrent(sealed: string): boolean {
    return sealed.startsWith(this.#current.id + '.')
  }
}
