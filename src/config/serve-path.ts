import { AuthgateConfigError } from '../core/config-error.ts'

/** A plain absolute path (`/docs`, `/api/openapi.json`); `/` allowed; no trailing slash, query or fragment. */
export function parseServePath(variable: string, raw: string): string {
  const p = raw.trim()
  if (p === '/') return p
  if (!/^(\/[A-Za-z0-9._~!$&'()*+,;=@-]+)+$/.test(p)) {
    throw new AuthgateConfigError(
      variable,
      `must be an absolute path of plain segments like /docs or /api/openapi.json (no trailing slash, query or parameters), got ${JSON.stringify(raw)}`,
    )
  }
  if (p.split('/').some((s) => s === '.' || s === '..'))
    throw new AuthgateConfigError(variable, `must not contain "." or ".." segments, got ${JSON.stringify(raw)}`)
  return p
}
