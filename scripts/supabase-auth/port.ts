import { createServer } from 'node:net'

/** A free port on 127.0.0.1, held by a placeholder listener until `release()`. */
export interface PortReservation {
  port: number
  release(): Promise<void>
}

/**
 * Picks a free port and keeps it bound until the caller is about to listen on it. A port that is
 * merely looked up and closed again goes back to the kernel's pool, and in the seconds before it is
 * used (Supabase Auth migrating, say) an outgoing connection or another suite's server can take it:
 * the listen then fails with EADDRINUSE. While the placeholder listens, neither can. The placeholder
 * does not keep the process alive: a suite that fails between reserving and releasing (a server
 * that did not start, say) still ends, where a forgotten listener would hold its file open forever.
 */
export async function reservePort(): Promise<PortReservation> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  server.unref()
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('could not pick a free port')
  let released: Promise<void> | undefined
  return {
    port: address.port,
    release: () => (released ??= new Promise<void>((resolve) => server.close(() => resolve()))),
  }
}
