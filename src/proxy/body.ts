import { isUtf8 } from 'node:buffer'
import sjson from 'secure-json-parse'

/**
 * Reading a request body for validation only: the bytes forwarded are always the original ones.
 */

export type MediaKind = 'json' | 'form' | 'other'

/** `application/json` with any parameters, and any `+json` type (NOTES.md, "Content types"). */
export function mediaKind(contentType: string | undefined): MediaKind {
  if (!contentType) return 'other'
  const semi = contentType.indexOf(';')
  const type = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase()
  if (type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))) return 'json'
  if (type === 'application/x-www-form-urlencoded') return 'form'
  return 'other'
}

/**
 * Deep nesting is cheap to send and expensive for anything that recurses (validators, logs,
 * JSON.stringify overflows its stack near 10^4–10^5 levels): refuse it before parsing.
 * Real Supabase Auth bodies nest a handful of levels (WebAuthn credentials ~4).
 */
export const MAX_JSON_DEPTH = 512

function exceedsDepth(buf: Buffer, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!
    if (inString) {
      if (c === 0x5c) i++ // skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return false
}

export type ParseResult = { ok: true; value: unknown } | { ok: false; message: string }

export function parseJson(buf: Buffer): ParseResult {
  if (buf.length === 0) return { ok: false, message: 'Request body is empty' }
  // RFC 8259 §8.1: JSON text exchanged between systems MUST be UTF-8. Decoding leniently would
  // validate replacement characters while different bytes are forwarded.
  if (!isUtf8(buf)) return { ok: false, message: 'Request body is not valid UTF-8' }
  if (exceedsDepth(buf, MAX_JSON_DEPTH)) return { ok: false, message: `Request body nests deeper than ${MAX_JSON_DEPTH} levels` }
  try {
    return { ok: true, value: sjson.parse(buf.toString('utf8'), undefined, { protoAction: 'error', constructorAction: 'error' }) }
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err)
    return { ok: false, message: `Could not parse request body as JSON: ${detail}` }
  }
}

/** Form fields as the backend reads them (Go's FormValue: the first value of a repeated key). */
export function parseForm(buf: Buffer): ParseResult {
  if (!isUtf8(buf)) return { ok: false, message: 'Request body is not valid UTF-8' }
  const out: Record<string, string> = Object.create(null)
  for (const [k, v] of new URLSearchParams(buf.toString('utf8'))) if (!(k in out)) out[k] = v
  return { ok: true, value: out }
}
