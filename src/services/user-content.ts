/**
 * Storage's answers are files users uploaded, served on authgate's origin: the origin of the app's
 * cookie session when cookie sessions are on. An HTML or SVG file opened from there would run its
 * script as that origin. Storage itself sends nothing against it, so authgate adds (docs/decisions.md,
 * D128):
 * - `X-Content-Type-Options: nosniff`: the browser takes the declared type, never sniffs a file into
 *   HTML (the upstream's own value is replaced);
 * - `Content-Security-Policy: sandbox`: a file opened as a document gets an opaque origin, no
 *   script, no forms, no popups (beside any policy the upstream sends; every policy applies). Not
 *   on a PDF: Chromium will not start its PDF viewer in a sandboxed document, and the viewer runs
 *   no script with the origin; with `nosniff`, a file declared a PDF is never read as anything else.
 * An image, video or download embedded by the app is not a document, so none of this changes it.
 */
export function makeInert(headers: string[]): string[] {
  let pdf = false
  const out: string[] = []
  for (let i = 0; i < headers.length; i += 2) {
    const lower = headers[i]!.toLowerCase()
    if (lower === 'x-content-type-options') continue
    if (lower === 'content-type') pdf = /^\s*application\/pdf\s*(;|$)/i.test(headers[i + 1]!)
    out.push(headers[i]!, headers[i + 1]!)
  }
  out.push('X-Content-Type-Options', 'nosniff')
  if (!pdf) out.push('Content-Security-Policy', 'sandbox')
  return out
}
