import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { READINESS_USER_AGENT } from '../../src/observability/health.ts'

/** What the fake backend received, byte for byte where bytes matter. */
export interface Recorded {
  method: string
  /** The request target exactly as it arrived (path and raw query). */
  target: string
  rawHeaders: string[]
  headers: IncomingMessage['headers']
  body: Buffer
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void

const defaultHandler: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end('{"ok":true}')
}

export interface FakeBackend {
  url: string
  port: number
  requests: Recorded[]
  /** Readiness's own probes of `/health`, kept apart: they come on their own schedule. */
  probes: Recorded[]
  handler: Handler
  close(): Promise<void>
}

/** A backend that records every request; tests swap `handler` to script answers. */
export async function startFakeBackend(handler: Handler = defaultHandler): Promise<FakeBackend> {
  const requests: Recorded[] = []
  const probes: Recorded[] = []
  const state: FakeBackend = {
    url: '',
    port: 0,
    requests,
    probes,
    handler,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const recorded: Recorded = {
        method: req.method ?? '',
        target: req.url ?? '',
        rawHeaders: req.rawHeaders,
        headers: req.headers,
        body,
      }
      // Readiness probes the backend on its own schedule: answered, kept apart from the test's requests.
      if (req.headers['user-agent'] === READINESS_USER_AGENT) probes.push(recorded)
      else requests.push(recorded)
      state.handler(req, res, body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.port = (server.address() as AddressInfo).port
  state.url = `http://127.0.0.1:${state.port}`
  return state
}

/** Lower-case header names of a recorded request, in order. */
export function headerNames(r: Recorded): string[] {
  const out: string[] = []
  for (let i = 0; i < r.rawHeaders.length; i += 2) out.push(r.rawHeaders[i]!.toLowerCase())
  return out
}
