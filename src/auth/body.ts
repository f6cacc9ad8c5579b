import { isUtf8 } from 'node:buffer'
import { isRecord } from '../core/is-record.ts'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import sjson from 'secure-json-parse'
import { sendError } from '../errors.ts'
import { readBodyBytes } from './body-reader.ts'
import { caseFoldedKey, flatObjectKeys, keyPath, repeatedKey } from './body-keys.ts'
import { backendValues } from '../core/go-values.ts'
import { decodingAnswer } from './backend-answers.ts'
import { mismatchDetail, typeMismatch, type TypeMismatch } from './go-types.ts'
import { routeName, type AuthRoute } from './routes/index.ts'
import { withoutNulls } from './types/nullable.ts'
import { holdsNul, withoutEmpty } from './types/presence.ts'

/**
 * The body of a mounted route, in one place: read once as bytes (the limit enforced while reading),
 * content type checked, parsed for validation only, and the original bytes kept for forwarding.
 * Validation judges the parsed copy; the backend always receives `request.rawBody`.
 */

declare module 'fastify' {
  interface FastifyRequest {
    /** The exact body bytes as received (mounted auth routes only; undefined elsewhere). */
    rawBody: Buffer | undefined
  }
}

/**
 * Installs the raw-bytes body reader on `scope`, an encapsulated context holding only mounted
 * routes: the application's own routes keep Fastify's parsers.
 */
export function readBodiesAsBytes(scope: FastifyInstance, bodyLimit: number): void {
  scope.decorateRequest('rawBody', undefined)
  scope.removeAllContentTypeParsers()
  scope.addContentTypeParser('*', { bodyLimit }, (request, payload, done) =>
    readBodyBytes(payload, request.headers['content-length'], bodyLimit, done),
  )
}

export type MediaKind = 'json' | 'form' | 'other'

/** `application/json` with any parameters, and any `+json` type (RFC 6839 structured syntax suffix). */
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

/**
 * Objects and arrays are cheap to send too (`[],` is three bytes, about 350,000 of them in 1 MiB)
 * and each costs the parser, the key walk and every copy of the body an allocation: refused beyond
 * this many, counted in the same pass as the depth (docs/decisions.md, D136). A WebAuthn credential
 * holds about ten; user metadata that needs more belongs in the database, not in a sign-up.
 */
export const MAX_JSON_CONTAINERS = 10_000

/**
 * Why a body's brackets are refused (too deep, or too many objects and arrays), if they are. A body
 * of at most MAX_JSON_DEPTH bytes holds at most that many opening brackets, one a byte, so it is
 * under both bounds without a look: a sign-in body (60–100 bytes) is not walked byte by byte.
 */
export function nestingProblem(buf: Buffer): string | undefined {
  if (buf.length <= MAX_JSON_DEPTH) return undefined
  let depth = 0
  let containers = 0
  let inString = false
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!
    if (inString) {
      if (c === 0x5c)
        i++ // skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) return `Request body nests deeper than ${MAX_JSON_DEPTH} levels`
      if (++containers > MAX_JSON_CONTAINERS)
        return `Request body holds more than ${MAX_JSON_CONTAINERS} objects and arrays`
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return undefined
}

/**
 * The parser's complaint without any of the body: V8 quotes up to ~30 characters of the text in
 * some messages (`Unexpected token 'h', "hunter2" is not valid JSON`), and a password may be among
 * them. Messages that point at a position, and the prototype-poisoning refusals, name no content.
 */
export function jsonErrorDetail(message: string): string {
  if (/^[^"]* in JSON at position \d+(?: \(line \d+ column \d+\))?$/.test(message)) return message
  if (message === 'Unexpected end of JSON input' || message.startsWith('Object contains forbidden')) return message
  return 'Unexpected token'
}

/**
 * A text (without a byte order mark) that secure-json-parse would pass to `JSON.parse` and return
 * unchanged: none of the spellings its two checks look for (`__proto__` and `constructor` as keys,
 * any letter of them possibly a `\u` escape). Three substring searches cost less than its two
 * regular expressions over every body; `escapes`, whether the text holds a backslash at all, spares
 * the first where it holds none.
 */
function plainJson(text: string, escapes: boolean): boolean {
  return (!escapes || !text.includes('\\u')) && !text.includes('__proto__') && !text.includes('constructor')
}

/** A `\u` escape of a UTF-16 surrogate (the only way a JSON text can spell a lone one). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

// ES2024's String.prototype.toWellFormed (Node.js 20 and later), beyond the compiler's ES2023 library.
const toWellFormed = (s: string): string => (s as unknown as { toWellFormed(): string }).toWellFormed()

/**
 * `value` with every lone surrogate, in strings and keys, read as U+FFFD, as Go's decoder reads
 * it: `"a\udc00"` is `a` then U+FFFD to Supabase Auth. `JSON.parse` keeps the lone surrogate, so
 * `a\ud800@example.com` and `a\ud801@example.com` would be two accounts to authgate's limits
 * and one to the backend. Pairs are kept.
 */
export function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return toWellFormed(value)
  if (Array.isArray(value)) return value.map(wellFormed)
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const item = wellFormed((value as Record<string, unknown>)[key])
    // Defined, not assigned: no key, whatever it reads as, reaches a prototype.
    Object.defineProperty(out, toWellFormed(key), { value: item, enumerable: true, writable: true, configurable: true })
  }
  return out
}

/**
 * What a number beyond float64's range (about 1.8e308) needs in its text: a three-digit exponent,
 * or with at most two exponent digits (up to e99) at least 210 digits before it (10^210 × 10^99).
 */
const BIG_NUMBER = /[eE]\+?\d{3}|\d{210}/

function holdsInfinity(value: unknown): boolean {
  if (typeof value === 'number') return !Number.isFinite(value)
  if (value === null || typeof value !== 'object') return false
  if (Array.isArray(value)) return value.some(holdsInfinity)
  for (const key of Object.keys(value)) if (holdsInfinity((value as Record<string, unknown>)[key])) return true
  return false
}

/**
 * `escapes`: whether the JSON text holds a backslash. Without one it holds no `\u` escape, so no
 * lone surrogate and no NUL character either: most bodies (a sign-in's) are read without looking
 * for them.
 */
export type ParseResult =
  { ok: true; value: unknown; text?: string; escapes?: boolean } | { ok: false; message: string }

export function parseJson(buf: Buffer): ParseResult {
  if (buf.length === 0) return { ok: false, message: 'Request body is empty' }
  // RFC 8259 §8.1: JSON text exchanged between systems MUST be UTF-8. Decoding leniently would
  // validate replacement characters while different bytes are forwarded.
  if (!isUtf8(buf)) return { ok: false, message: 'Request body is not valid UTF-8' }
  const nesting = nestingProblem(buf)
  if (nesting !== undefined) return { ok: false, message: nesting }
  const text = buf.toString('utf8')
  // Go's decoder refuses a byte order mark, which secure-json-parse would strip: judged without it,
  // a body would be validated, limited and counted though the backend cannot read it.
  if (text.charCodeAt(0) === 0xfeff)
    return { ok: false, message: 'Could not parse request body as JSON: Unexpected token' }
  const escapes = text.includes('\\')
  try {
    const value: unknown = plainJson(text, escapes)
      ? JSON.parse(text)
      : sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
    // Go's decoder fails on a number beyond float64 (`1e400`, 400 digits) wherever it decodes one,
    // where JSON.parse reads Infinity: refused, wherever it is (docs/decisions.md, D137).
    if (BIG_NUMBER.test(text) && holdsInfinity(value))
      return { ok: false, message: 'Could not parse request body as JSON: a number is beyond the range of a float64' }
    return { ok: true, value: escapes && SURROGATE_ESCAPE.test(text) ? wellFormed(value) : value, text, escapes }
  } catch (err) {
    const detail = jsonErrorDetail(err instanceof Error ? err.message : String(err))
    return { ok: false, message: `Could not parse request body as JSON: ${detail}` }
  }
}

/**
 * A body Supabase Auth's decoder cannot read into the route's struct (src/auth/go-types.ts): its
 * own answer where the route has one (the OAuth shape on `/oauth/token`), else 400 `bad_json` in its
 * words.
 */
export function refuseUndecodable(request: FastifyRequest, reply: FastifyReply, route: AuthRoute, m: TypeMismatch) {
  const answer = decodingAnswer(routeName(route))
  if (answer) return sendError(request, reply, answer)
  return sendError(request, reply, 'bad_json', `Could not parse request body as JSON: ${mismatchDetail(m)}`)
}

/** Form fields as the backend reads them (Go's FormValue: the first value of a repeated key). */
export function parseForm(buf: Buffer): ParseResult {
  if (!isUtf8(buf)) return { ok: false, message: 'Request body is not valid UTF-8' }
  return { ok: true, value: backendValues(buf.toString('utf8')) }
}

/**
 * A field of a form body's schema that the query names and the form does not hold. Go's `FormValue`
 * reads the form's pairs, then the query's: to Supabase Auth such a field has the query's value,
 * and to authgate, which judges the body, none. Refused rather than judged on one reading of two
 * (docs/decisions.md, D137).
 */
export function formFieldInQuery(
  route: AuthRoute,
  form: Readonly<Record<string, string>>,
  query: Readonly<Record<string, string>> | undefined,
): string | undefined {
  if (query === undefined || !isRecord((route.body as Record<string, unknown>).properties)) return undefined
  const fields = (route.body as { properties: Record<string, unknown> }).properties
  for (const name of Object.keys(query)) if (Object.hasOwn(fields, name) && !(name in form)) return name
  return undefined
}

/**
 * A key the backend would read otherwise than authgate: repeated in one object, or in another case
 * than the field it names (src/auth/body-keys.ts). A form's keys are exact for the backend too.
 */
export function unclearKey(
  text: string,
  value: unknown,
  schema: Record<string, unknown>,
): { code: 'bad_json' | 'validation_failed'; message: string } | undefined {
  // A flat object with as many keys as its text names repeats none: the walk with a set of each
  // object's keys is for the others.
  const flat = flatObjectKeys(text)
  const repeated =
    flat !== undefined && isRecord(value) && flat === Object.keys(value).length ? undefined : repeatedKey(text)
  if (repeated)
    return {
      code: 'bad_json',
      message: `Request body has the key ${keyPath(repeated)} more than once: send each key once`,
    }
  const folded = caseFoldedKey(value, schema)
  if (folded) {
    const field = [...folded.path, folded.field].join('.')
    return {
      code: 'validation_failed',
      message: `body/${keyPath(folded)} differs only in case from the field ${field}, which Supabase Auth would read it as: send it as ${folded.field}`,
    }
  }
  return undefined
}

/**
 * The first listed field whose value holds a NUL character, if any. `text`, the JSON it was parsed
 * from, when there is one: a NUL can only be written `\u0000` there, so a text without it holds none.
 */
export function nulField(value: unknown, fields: readonly string[] | undefined, text?: string): string | undefined {
  if (text !== undefined && !text.includes('\\u0000')) return undefined
  if (fields === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) return undefined
  const record = value as Record<string, unknown>
  return fields.find((f) => Object.hasOwn(record, f) && holdsNul(record[f]))
}

const JSON_ONLY = 'Content-Type must be application/json'
const JSON_OR_FORM = 'Content-Type must be application/json or application/x-www-form-urlencoded'

/**
 * What authgate makes of a mounted route's body: the value the validator judges, or why it is
 * refused (a code and message, or a value of a type the backend's decoder cannot read). The same
 * for every caller: the body hook, the worst-body bench and the Go oracle's property test.
 */
export type BodyReading =
  | { body: unknown }
  | { refused: 'bad_json' | 'validation_failed' | 'unsupported_media_type'; message: string }
  | { undecodable: TypeMismatch }

export function readBody(
  route: AuthRoute,
  raw: Buffer | undefined,
  contentType: string | undefined,
  query?: Readonly<Record<string, string>>,
): BodyReading {
  const kind = mediaKind(contentType)
  if (raw === undefined || raw.length === 0) {
    // The backend never reads this body: an empty one is fine whatever the Content-Type says.
    // On a route that takes forms, an empty body that is not declared JSON is an empty form
    // (Supabase Auth parses anything but JSON as a form there): the schema judges its missing
    // fields, in the words of a form, not of JSON.
    if (route.bodyOptional === true || (route.form && kind !== 'json')) return { body: {} }
    return { refused: 'bad_json', message: 'Request body is empty' }
  }
  if (kind === 'json' || (kind === 'form' && route.form)) {
    const parsed = kind === 'json' ? parseJson(raw) : parseForm(raw)
    if (!parsed.ok) return { refused: 'bad_json', message: parsed.message }
    if (kind === 'form') {
      const named = formFieldInQuery(route, parsed.value as Record<string, string>, query)
      if (named !== undefined)
        return {
          refused: 'validation_failed',
          message: `querystring/${named} names a field of the form, which Supabase Auth may read from the query: send it in the body`,
        }
    }
    if (kind === 'json') {
      // Go's decoder reads a top-level `null` into the request's struct as no field at all, and
      // refuses any other value that is not an object: so does authgate. The bytes go on as sent.
      if (parsed.value === null) return { body: {} }
      if (typeof parsed.value !== 'object' || Array.isArray(parsed.value))
        return { undecodable: typeMismatch(route.body, parsed.value)! }
      const unclear = unclearKey(parsed.text!, parsed.value, route.body as Record<string, unknown>)
      if (unclear) return { refused: unclear.code, message: unclear.message }
    }
    // A JSON text without a backslash cannot spell a NUL character.
    const nul = parsed.escapes === false ? undefined : nulField(parsed.value, route.nulRefused, parsed.text)
    if (nul !== undefined)
      return {
        refused: 'validation_failed',
        message: `body/${nul} contains a NUL character (\\u0000), which Supabase Auth cannot store`,
      }
    // Supabase Auth reads a `null` property as an absent one, and on some fields `""` too: so
    // does the validator. A text without the word `null` holds no null to look for.
    const value = kind === 'json' && parsed.text!.includes('null') ? withoutNulls(parsed.value) : parsed.value
    return { body: withoutEmpty(value, route.emptyIsAbsent) }
  }
  return { refused: 'unsupported_media_type', message: route.form ? JSON_OR_FORM : JSON_ONLY }
}

/**
 * Reads the body of a mounted route: keeps the bytes for the forwarder (`request.rawBody`) and
 * replaces `request.body` with the parsed copy the validator judges, or answers the refusal (and
 * returns the reply). src/auth/mount.ts runs it before validation.
 */
export function bodyReader(route: AuthRoute) {
  return (request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined => {
    const raw = request.body as Buffer | undefined
    request.rawBody = raw
    if (!route.body) return
    const read = readBody(route, raw, request.headers['content-type'], request.query as Record<string, string>)
    if ('body' in read) {
      request.body = read.body
      return
    }
    if ('undecodable' in read) return refuseUndecodable(request, reply, route, read.undecodable)
    return sendError(request, reply, read.refused, read.message)
  }
}
