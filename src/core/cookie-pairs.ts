/**
 * Reading the pairs of a `Cookie` request header (RFC 6265 §4.2.1: `name=value` pairs separated by
 * `;`), for the parts that look at one cookie: the session gate finds its cookie, the forwarder takes
 * it out of what Supabase Auth receives.
 */

/** The name of one `name=value` pair of a `Cookie` header (the whole pair when it has no `=`). */
function pairName(pair: string): string {
  const eq = pair.indexOf('=')
  return (eq < 0 ? pair : pair.slice(0, eq)).trim()
}

/**
 * A `Cookie` value without the cookies named `name`, the others as they were written; undefined
 * when none is left. A name that merely starts the same (`name_x=`) is another cookie.
 */
export function withoutCookie(value: string, name: string): string | undefined {
  if (!value.includes(name)) return value
  const rest = value
    .split(';')
    .filter((pair) => pairName(pair) !== name)
    .join(';')
    .trim()
  return rest === '' ? undefined : rest
}

/**
 * The value of the one cookie named `name`; undefined when there is none, or more than one (a
 * second set by a sibling subdomain for a name without the `__Host-` prefix: neither is trusted).
 */
export function onlyCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined || header === '') return undefined
  let found: string | undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0 || pairName(part) !== name) continue
    if (found !== undefined) return undefined
    found = part.slice(eq + 1).trim()
  }
  return found
}
