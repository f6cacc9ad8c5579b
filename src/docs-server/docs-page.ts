import { posix } from 'node:path'

/**
 * The reference page: our own HTML around Scalar's browser build, configured so that nothing
 * leaves the machine (checked against the build inside @scalar/fastify-api-reference 1.76.3, by
 * the Chromium test that counts the page's requests):
 * - `withDefaultFonts: false`: the default theme otherwise loads fonts from fonts.scalar.com;
 * - `telemetry: false`;
 * - `agent.disabled`, `mcp.disabled`: on localhost both are enabled by default and talk to
 *   Scalar's services;
 * - `showDeveloperTools: 'never'`: the toolbar offers uploading the document to Scalar;
 * - no `proxyUrl`: "try it" requests go straight to the documented servers.
 * The page's Content-Security-Policy enforces the same: scripts only from this origin plus the
 * one inline bootstrap carrying the per-response nonce; connections to this origin (and the
 * documented servers' origins).
 */
export interface DocsPageOptions {
  title: string
  /** Absolute paths as the application serves them (prefix included). */
  pagePath: string
  scriptPath: string
  documentPath: string
  /** Origins the "try it" client may call besides this one (from the document's servers). */
  connectOrigins?: string[]
  /** Extra Scalar configuration (theme, layout, ...); the privacy settings always win. */
  scalar?: Record<string, unknown>
}

const HARDENED = {
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: 'never',
  agent: { disabled: true },
  mcp: { disabled: true },
  persistAuth: false,
} as const

const FORBIDDEN_KEYS = [
  'proxyUrl',
  'proxy',
  'pluginUrls',
  'externalUrls',
  'bundle',
  'cdn',
  'content',
  'sources',
  'url',
  'spec',
]

/**
 * A URL for `target` relative to the page at `from`, so the page keeps working behind a reverse
 * proxy that mounts the service under a path of its own.
 */
export function relativeUrl(from: string, target: string): string {
  const dir = from.endsWith('/') ? from : posix.dirname(from)
  let rel = posix.relative(dir, target)
  if (target.endsWith('/') && !rel.endsWith('/')) rel += '/'
  if (rel === '') rel = posix.basename(target) || '.'
  return rel.startsWith('.') ? rel : `./${rel}`
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** JSON that is safe inside an inline <script> (no `</script>`, no HTML comment openers, no JS line separators). */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')
}

export function scalarConfiguration(opts: DocsPageOptions, requestPath: string): Record<string, unknown> {
  const extra = { ...(opts.scalar ?? {}) }
  for (const k of FORBIDDEN_KEYS) delete extra[k]
  return {
    theme: 'default',
    showOperationId: true,
    ...extra,
    url: relativeUrl(requestPath, opts.documentPath),
    metaData: { title: opts.title },
    ...HARDENED,
  }
}

export function contentSecurityPolicy(nonce: string, connectOrigins: string[] = []): string {
  const connect = ["'self'", ...connectOrigins].join(' ')
  return [
    "default-src 'none'",
    `script-src 'self' 'nonce-${nonce}'`,
    // Scalar and Vue insert <style> elements at run time (theme, component styles); a nonce
    // would switch 'unsafe-inline' off, so inline styles are allowed and nothing else is.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src ${connect}`,
    "worker-src 'self' blob:",
    "manifest-src 'self'",
    "frame-src 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'self'",
  ].join('; ')
}

export function docsPageHtml(opts: DocsPageOptions, requestPath: string, nonce: string): string {
  const config = scalarConfiguration(opts, requestPath)
  const script = relativeUrl(requestPath, opts.scriptPath)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${escapeHtml(opts.title)}</title>
</head>
<body>
<div id="api-reference-root"></div>
<script src="${escapeHtml(script)}"></script>
<script nonce="${nonce}">Scalar.createApiReference('#api-reference-root', ${scriptJson(config)})</script>
</body>
</html>
`
}
