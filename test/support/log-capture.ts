import { Writable } from 'node:stream'

/** A pino destination that keeps every line, parsed, for assertions on what was logged. */
export function logCapture(): { stream: Writable; lines: Array<Record<string, unknown>>; raw: () => string } {
  const lines: Array<Record<string, unknown>> = []
  let text = ''
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const s = chunk.toString('utf8')
      text += s
      for (const line of s.split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>)
      cb()
    },
  })
  return { stream, lines, raw: () => text }
}
