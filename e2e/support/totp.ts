import { createHmac } from 'node:crypto'

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/** RFC 4648 base32 (no padding needed), as TOTP secrets are written. */
export function base32Decode(text: string): Buffer {
  const clean = text.replace(/=+$/, '').toUpperCase()
  let bits = 0
  let value = 0
  const out: number[] = []
  for (const c of clean) {
    const i = BASE32.indexOf(c)
    if (i === -1) throw new Error(`not base32: ${JSON.stringify(c)}`)
    value = (value << 5) | i
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

/** RFC 6238 TOTP (HMAC-SHA1, 30-second steps, 6 digits), the defaults authenticator apps use. */
export function totp(secretBase32: string, atMs = Date.now(), stepSeconds = 30, digits = 6): string {
  const counter = Buffer.alloc(8)
  counter.writeBigUInt64BE(BigInt(Math.floor(atMs / 1000 / stepSeconds)))
  const mac = createHmac('sha1', base32Decode(secretBase32)).update(counter).digest()
  // RFC 4226 §5.3 dynamic truncation.
  const offset = mac[mac.length - 1]! & 0x0f
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits
  return String(code).padStart(digits, '0')
}
