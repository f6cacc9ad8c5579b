/**
 * Load generation for the benchmark harness, written here so the harness needs nothing beyond wrk:
 *
 * - `constantRate`: an open-loop generator. Requests are due at fixed intervals whatever the server
 *   does; a request that cannot go out on time (every connection busy) waits in a backlog, and its
 *   latency counts from when it was due, not from when it was sent. A closed-loop tool (wrk, hey -q)
 *   sends less while the server stalls and so hides the stall from its percentiles (coordinated
 *   omission).
 * - `idleConnections`: opens N keep-alive connections, one request each, and holds them open.
 *
 * Plain sockets and pre-built request bytes: at 5,000 req/s the generator must cost little of a
 * shared two-core machine. Responses are framed by Content-Length or chunked encoding.
 */
import { connect, type Socket } from 'node:net'

export interface RequestSpec {
  method: 'GET' | 'POST'
  path: string
  body?: string
  headers?: Record<string, string>
}

export function requestBytes(port: number, spec: RequestSpec): Buffer {
  let head = `${spec.method} ${spec.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n`
  for (const [k, v] of Object.entries(spec.headers ?? {})) head += `${k}: ${v}\r\n`
  if (spec.body !== undefined) head += `Content-Length: ${Buffer.byteLength(spec.body)}\r\n`
  return Buffer.from(head + '\r\n' + (spec.body ?? ''))
}

/** Calls `onResponse(status)` once per complete HTTP/1.1 response read from the socket. */
function responseReader(onResponse: (status: number) => void): (chunk: Buffer) => void {
  let buf: Buffer = Buffer.alloc(0)
  return (chunk) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
    for (;;) {
      const end = buf.indexOf('\r\n\r\n')
      if (end === -1) return
      const head = buf.toString('latin1', 0, end)
      const status = Number(head.slice(9, 12))
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head)
      let total: number
      if (cl) total = end + 4 + Number(cl[1])
      else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
        const last = buf.indexOf('\r\n0\r\n\r\n', end + 4 - 2)
        if (last === -1) return
        total = last + 7
      } else total = end + 4
      if (buf.length < total) return
      buf = buf.subarray(total)
      onResponse(status)
    }
  }
}

export interface RateResult {
  due: number
  completed: number
  errors: number
  /** Count per status code. */
  statuses: Record<number, number>
  /** Milliseconds from the time each request was due. */
  p50: number
  p99: number
  max: number
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/**
 * `rate` requests per second for `durationMs` over at most `connections` keep-alive connections.
 * Stops on its own: requests still unanswered a second after the end are counted as errors.
 */
export async function constantRate(options: {
  port: number
  request: RequestSpec
  rate: number
  durationMs: number
  connections: number
}): Promise<RateResult> {
  const bytes = requestBytes(options.port, options.request)
  const latencies = new Float64Array(Math.ceil((options.rate * options.durationMs) / 1000) + 16)
  let n = 0
  let completed = 0
  let errors = 0
  const statuses: Record<number, number> = {}
  const idle: Conn[] = []
  const backlog: number[] = []
  let backlogHead = 0

  interface Conn {
    socket: Socket
    dueAt: number
  }
  const conns: Conn[] = []
  await Promise.all(
    Array.from({ length: options.connections }, () => {
      return new Promise<void>((resolve, reject) => {
        const socket = connect(options.port, '127.0.0.1', () => resolve())
        socket.setNoDelay(true)
        const conn: Conn = { socket, dueAt: 0 }
        socket.once('error', reject)
        socket.on('data', (chunk: Buffer) => read(chunk))
        const read = responseReader((status) => {
          latencies[n++] = performance.now() - conn.dueAt
          completed++
          statuses[status] = (statuses[status] ?? 0) + 1
          release(conn)
        })
        conns.push(conn)
        idle.push(conn)
      })
    }),
  )
  for (const c of conns) c.socket.on('error', () => errors++)

  function send(conn: Conn, dueAt: number) {
    conn.dueAt = dueAt
    conn.socket.write(bytes)
  }
  function release(conn: Conn) {
    if (backlogHead < backlog.length) send(conn, backlog[backlogHead++]!)
    else idle.push(conn)
  }

  const interval = 1000 / options.rate
  const total = Math.floor((options.rate * options.durationMs) / 1000)
  const start = performance.now()
  let issued = 0
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now()
      while (issued < total && start + issued * interval <= now) {
        const dueAt = start + issued * interval
        issued++
        const conn = idle.pop()
        if (conn) send(conn, dueAt)
        else backlog.push(dueAt)
      }
      if (issued < total) setTimeout(tick, 1)
      else resolve()
    }
    tick()
  })
  const deadline = performance.now() + 1000
  while (completed + errors < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5))
  for (const c of conns) c.socket.destroy()
  const sorted = latencies.subarray(0, n).sort()
  return {
    due: total,
    completed,
    errors: errors + (total - completed - errors > 0 ? total - completed - errors : 0),
    statuses,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
  }
}

/**
 * Opens `count` connections, sends one request on each and keeps them open (keep-alive, idle).
 * Returns a function that closes them all.
 */
export async function idleConnections(port: number, request: RequestSpec, count: number): Promise<() => void> {
  const bytes = requestBytes(port, request)
  const sockets: Socket[] = []
  const batch = 250
  for (let i = 0; i < count; i += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, count - i) }, () => {
        return new Promise<void>((resolve) => {
          const socket = connect(port, '127.0.0.1', () => socket.write(bytes))
          sockets.push(socket)
          socket.on('error', () => resolve())
          socket.on(
            'data',
            responseReader(() => resolve()),
          )
        })
      }),
    )
  }
  return () => {
    for (const s of sockets) s.destroy()
  }
}
