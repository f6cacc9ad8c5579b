/**
 * The `{id}` segment of PATCH/DELETE /passkeys/{id} (SEED.md §4.4, NOTES.md decision 3). The
 * inbound segment becomes part of the backend path, so it is checked on its percent-decoded
 * form and re-encoded: whatever a client writes, the backend sees exactly one segment under
 * /passkeys/.
 */
export type GuardResult = { ok: true; id: string; encoded: string } | { ok: false; reason: string }

// C0 controls, DEL and C1 controls: never part of an id, and a classic log/header injection tool.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

export function checkIdSegment(rawSegment: string): GuardResult {
  if (rawSegment === '') return { ok: false, reason: 'empty id' }
  if (rawSegment.includes('/')) return { ok: false, reason: 'id must be a single path segment' }
  let id: string
  try {
    id = decodeURIComponent(rawSegment)
  } catch {
    return { ok: false, reason: 'malformed percent-encoding in id' }
  }
  if (id === '') return { ok: false, reason: 'empty id' }
  if (id.includes('/') || id.includes('\\')) return { ok: false, reason: 'id must not contain "/" or "\\"' }
  if (id === '.' || id === '..') return { ok: false, reason: 'id must not be "." or ".."' }
  if (CONTROL.test(id)) return { ok: false, reason: 'id must not contain control characters' }
  // Lone surrogates cannot be re-encoded (encodeURIComponent throws); decodeURIComponent never yields them,
  // but keep the function total.
  let encoded: string
  try {
    encoded = encodeURIComponent(id)
  } catch {
    return { ok: false, reason: 'id is not valid Unicode' }
  }
  return { ok: true, id, encoded }
}

/** The raw (still percent-encoded) segment after `<base>/`, from the request target. */
export function rawSegmentAfter(url: string, base: string): string | undefined {
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  if (!path.startsWith(base + '/')) return undefined
  return path.slice(base.length + 1)
}
