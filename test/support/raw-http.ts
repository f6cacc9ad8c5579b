import { connect } from 'node:net'

/** Sends raw bytes on a fresh socket and resolves with everything received until the peer closes or `idleMs` passes. */
export function rawExchange(port: number, request: string | Buffer, idleMs = 300): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect(port, '127.0.0.1', () => socket.write(request))
    let timer = setTimeout(() => socket.destroy(), idleMs * 10)
    socket.on('data', (c) => {
      chunks.push(c)
      clearTimeout(timer)
      timer = setTimeout(() => socket.destroy(), idleMs)
    })
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(chunks))
    })
    socket.on('error', (err) => {
      clearTimeout(timer)
      if (chunks.length) resolve(Buffer.concat(chunks))
      else reject(err)
    })
  })
}

export interface RawResponse {
  statusLine: string
  /** Header lines exactly as received, in order. */
  headerLines: string[]
  body: Buffer
}

export function splitResponse(raw: Buffer): RawResponse {
  const end = raw.indexOf('\r\n\r\n')
  if (end === -1) throw new Error('no header terminator in: ' + raw.toString('latin1').slice(0, 200))
  const lines = raw.subarray(0, end).toString('latin1').split('\r\n')
  return { statusLine: lines[0]!, headerLines: lines.slice(1), body: raw.subarray(end + 4) }
}
