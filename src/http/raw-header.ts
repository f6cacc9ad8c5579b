import type { IncomingMessage } from 'node:http'

/**
 * `req.headers[name]` for a header Node.js joins with ", " when repeated (any but its short list of
 * special ones), read from `rawHeaders` without building `req.headers`: the first read of that
 * object lower-cases and copies every header of the request, which a path that answers without
 * reading the rest (the early 429) need not pay. `name` is lower case.
 */
export function joinedHeader(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders
  let value: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i]!
    if (field.length !== name.length || field.toLowerCase() !== name) continue
    value = value === undefined ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`
  }
  return value
}
