/** A logger that keeps what it is given, for asserting on warnings. */
export function recordingLogger() {
  const lines: { level: 'warn' | 'info'; args: unknown[] }[] = []
  return {
    lines,
    warn: (...args: unknown[]) => void lines.push({ level: 'warn', args }),
    info: (...args: unknown[]) => void lines.push({ level: 'info', args }),
  }
}
