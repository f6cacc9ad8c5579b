/**
 * Path parameters of mounted routes (`{id}`, `{factor_id}`, `{identity_id}`, `{authorization_id}`, ...).
 * An inbound segment becomes part of the backend path, so it is checked on its percent-decoded
 * form and re-encoded: whatever a client writes, the backend sees exactly one segment where the
 * template has a parameter, and the rest of the backend path comes from the template, never from
 * the URL.
 */
export type GuardResult = { ok: true; id: string; encoded: string } | { ok: false; reason: string }

// C0 controls, DEL and C1 controls: never part of an id, and a classic log/header injection tool.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** Checks one raw (still percent-encoded) path segment; reasons name the parameter. */
export function checkParamSegment(rawSegment: string, name = 'id'): GuardResult {
  if (rawSegment === '') return { ok: false, reason: `empty ${name}` }
  if (rawSegment.includes('/')) return { ok: false, reason: `${name} must be a single path segment` }
  let id: string
  try {
    id = decodeURIComponent(rawSegment)
  } catch {
    return { ok: false, reason: `malformed percent-encoding in ${name}` }
  }
  if (id === '') return { ok: false, reason: `empty ${name}` }
  if (id.includes('/') || id.includes('\\')) return { ok: false, reason: `${name} must not contain "/" or "\\"` }
  if (id === '.' || id === '..') return { ok: false, reason: `${name} must not be "." or ".."` }
  if (CONTROL.test(id)) return { ok: false, reason: `${name} must not contain control characters` }
  // Lone surrogates cannot be re-encoded (encodeURIComponent throws); decodeURIComponent never yields them,
  // but keep the function total.
  let encoded: string
  try {
    encoded = encodeURIComponent(id)
  } catch {
    return { ok: false, reason: `${name} is not valid Unicode` }
  }
  return { ok: true, id, encoded }
}

const PARAM = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/** Parameter names of a path template, in order: `/factors/{factor_id}/verify` → `['factor_id']`. */
export function templateParams(template: string): string[] {
  return [...template.matchAll(PARAM)].map((m) => m[1]!)
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * Matches a raw path against a template where each `{param}` may stand for anything (the guard
 * judges it afterwards): a parameter spanning several segments is a rejected parameter, not a
 * different route.
 */
export function templateMatcher(template: string): (rawPath: string) => string[] | undefined {
  const names = templateParams(template)
  const statics = template.split(PARAM).filter((_, i) => i % 2 === 0)
  const re = new RegExp('^' + statics.map(escapeRegExp).join('(.*)') + '$', 's')
  return (rawPath) => {
    const m = re.exec(rawPath)
    return m ? names.map((_, i) => m[i + 1]!) : undefined
  }
}

export type Resolved = { ok: true; path: string } | { ok: false; message: string }

/**
 * The backend path for a request target: each parameter checked and re-encoded into the template.
 * Undefined when the target does not have the template's shape at all.
 */
export function resolveTemplate(
  rawTarget: string,
  prefix: string,
  template: string,
  match = templateMatcher(template),
): Resolved | undefined {
  const q = rawTarget.indexOf('?')
  const path = q === -1 ? rawTarget : rawTarget.slice(0, q)
  if (!path.startsWith(prefix + '/')) return undefined
  const values = match(path.slice(prefix.length))
  if (!values) return undefined
  const names = templateParams(template)
  let out = template
  for (const [i, name] of names.entries()) {
    const checked = checkParamSegment(values[i]!, name)
    if (!checked.ok) return { ok: false, message: `Invalid ${name}: ${checked.reason}` }
    out = out.replace(`{${name}}`, () => checked.encoded)
  }
  return { ok: true, path: out }
}
