/**
 * Memory of the services' pass-through: the standalone service (`node src/main.ts`, configured by
 * its environment) relays 100 MB up to a Storage stand-in and 100 MB back down, while its resident
 * set (VmRSS of that process alone, from /proc) is sampled every 20 ms. The stand-in holds nothing
 * (it counts what it receives and generates what it sends), so any growth is authgate's.
 *
 *   node bench/services-stream.ts [--mb 100]
 *
 * e2e/services-memory.test.ts runs the same measurement and holds it to < 20 MiB.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import { createServer as createNetServer, type AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url))
const CHUNK = Buffer.alloc(64 * 1024, 0x61)
const KEY = 'sb_publishable_bench'
const ANON = 'eyJhbGciOiJIUzI1NiJ9.anon.sig'
/** Bytes each way before the baseline is taken. */
const WARM = 64 * 1024 * 1024

export interface StreamFigures {
  bytes: number
  /** VmRSS of the service once warm, before the transfers. */
  baselineBytes: number
  uploadPeakBytes: number
  downloadPeakBytes: number
  uploadMs: number
  downloadMs: number
  /** VmRSS one second after both transfers: what stays. */
  settledBytes: number
}

/** Counts what it is sent and generates what it is asked for; `/auth/*` answers `{}` (the service's start-up check). */
async function startSink(total: number): Promise<{ port: number; received: () => number; server: Server }> {
  let received = 0
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/auth')) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    if (req.method === 'POST') {
      req.on('data', (c: Buffer) => (received += c.length))
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(`{"size":${received}}`))
      return
    }
    // The warm-up's download is small, the measured one `total`.
    const size = req.url?.endsWith('/warm') ? WARM : total
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) })
    let sent = 0
    const pump = () => {
      while (sent < size) {
        sent += CHUNK.length
        if (!res.write(CHUNK)) return void res.once('drain', pump)
      }
      res.end()
    }
    pump()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, received: () => received, server }
}

async function freePort(): Promise<number> {
  const s = createNetServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as AddressInfo).port
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m![1]) * 1024
}

async function peak(pid: number, run: () => Promise<void>): Promise<{ peak: number; ms: number }> {
  let top = rssOf(pid)
  const timer = setInterval(() => (top = Math.max(top, rssOf(pid))), 20)
  const started = performance.now()
  try {
    await run()
  } finally {
    clearInterval(timer)
  }
  return { peak: Math.max(top, rssOf(pid)), ms: performance.now() - started }
}

function upload(port: number, total: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({
      port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/storage/v1/object/b/big',
      headers: { apikey: KEY, 'content-type': 'application/octet-stream', 'content-length': total },
    })
    req.on('response', (res) => {
      res.resume()
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`upload: ${res.statusCode}`))))
    })
    req.on('error', reject)
    let written = 0
    const pump = () => {
      while (written < total) {
        written += CHUNK.length
        if (!req.write(CHUNK)) return void req.once('drain', pump)
      }
      req.end()
    }
    pump()
  })
}

function download(port: number, name = 'big'): Promise<number> {
  return new Promise((resolve, reject) => {
    let got = 0
    request({ port, host: '127.0.0.1', path: `/storage/v1/object/b/${name}`, headers: { apikey: KEY } })
      .on('response', (res) => {
        res.on('data', (c: Buffer) => (got += c.length))
        res.on('end', () => resolve(got))
        res.on('error', reject)
      })
      .on('error', reject)
      .end()
  })
}

/** Runs the service and both transfers; `total` bytes each way (a multiple of 64 KiB). */
export async function measureStreaming(total: number): Promise<StreamFigures> {
  const sink = await startSink(total)
  const port = await freePort()
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      AUTHGATE_BACKEND_URL: `http://127.0.0.1:${sink.port}/auth`,
      AUTHGATE_STORAGE_URL: `http://127.0.0.1:${sink.port}`,
      AUTHGATE_ANON_KEY: ANON,
      AUTHGATE_PUBLISHABLE_KEYS: KEY,
      AUTHGATE_LOG_LEVEL: 'warn',
      // A loaded machine may take longer than the default 30 s for the whole 100 MB request.
      AUTHGATE_REQUEST_TIMEOUT: '5m',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  try {
    const deadline = Date.now() + 30_000
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/livez`)
        await res.body?.cancel()
        if (res.ok) break
      } catch {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`authgate did not start:\n${stderr}`)
      }
      await sleep(100)
    }
    // Warm: the pool, the parsers and the code paths exist before the baseline.
    await upload(port, WARM)
    await download(port, 'warm')
    await sleep(200)
    const baselineBytes = rssOf(child.pid!)
    const up = await peak(child.pid!, () => upload(port, total))
    let got = 0
    const down = await peak(child.pid!, async () => void (got = await download(port)))
    if (got !== total) throw new Error(`downloaded ${got} of ${total} bytes`)
    await sleep(1000)
    const settledBytes = rssOf(child.pid!)
    return {
      settledBytes,
      bytes: total,
      baselineBytes,
      uploadPeakBytes: up.peak,
      downloadPeakBytes: down.peak,
      uploadMs: up.ms,
      downloadMs: down.ms,
    }
  } finally {
    child.kill('SIGTERM')
    await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())))
    sink.server.closeAllConnections()
    await new Promise<void>((resolve) => sink.server.close(() => resolve()))
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { mb: { type: 'string', default: '100' } } })
  const total = Number(values.mb) * 1024 * 1024
  const f = await measureStreaming(total)
  const mib = (b: number) => (b / 2 ** 20).toFixed(1)
  console.log(
    `${values.mb} MiB each way: baseline RSS ${mib(f.baselineBytes)} MiB; ` +
      `upload peak +${mib(f.uploadPeakBytes - f.baselineBytes)} MiB in ${(f.uploadMs / 1000).toFixed(2)} s; ` +
      `download peak +${mib(f.downloadPeakBytes - f.baselineBytes)} MiB in ${(f.downloadMs / 1000).toFixed(2)} s; ` +
      `one second later +${mib(f.settledBytes - f.baselineBytes)} MiB`,
  )
}
