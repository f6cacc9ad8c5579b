/** One finding of `authgate doctor`: what was seen, and the setting that fixes it. */
export interface Finding {
  check: string
  status: 'ok' | 'info' | 'warn' | 'error'
  message: string
  /** The setting (authgate's `AUTHGATE_*` or Supabase Auth's `GOTRUE_*`/`API_EXTERNAL_URL`) that fixes it. */
  fix?: string
}

const MARK: Record<Finding['status'], string> = { ok: 'ok   ', info: 'info ', warn: 'WARN ', error: 'ERROR' }

/** The report as text, one finding a line (its fix indented below it). */
export function formatFindings(findings: readonly Finding[]): string {
  const width = Math.max(...findings.map((f) => f.check.length))
  const lines: string[] = []
  for (const f of findings) {
    lines.push(`${MARK[f.status]}  ${f.check.padEnd(width)}  ${f.message}`)
    if (f.fix !== undefined) lines.push(`${' '.repeat(7 + width + 2)}fix: ${f.fix}`)
  }
  const errors = findings.filter((f) => f.status === 'error').length
  const warnings = findings.filter((f) => f.status === 'warn').length
  lines.push('', `${errors} error(s), ${warnings} warning(s)`)
  return lines.join('\n') + '\n'
}

export const hasError = (findings: readonly Finding[]): boolean => findings.some((f) => f.status === 'error')
