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
  /** A body too large for a string in a script: the file's bytes (wrk reads it; the open-loop generator does not send it). */
  bodyFile?: string
  headers?: Record<string, string>
}

export function requestBytes(port: number, spec: RequestSpec): Buffer {
  let head = `${spec.method} ${spec.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n`
  for (const [k, v] of Object.entries(spec.headers ?? {})) head += `${k}: ${v}\r\n`
  if (spec.body !== undefined) head += `Content-Length: ${Buffer.byteLength(spec.body)}\r\n`
  return Buffer.from(head + '\r\n' + (spec.body ?? ''))
}

/** Calls `onResponse(status, body)` once per complete HTTP/1.1 response read from the socket (the body as framed). */
function responseReader(onResponse: (status: number, body: Buffer) => void): (chunk: Buffer) => void {
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
      const body = buf.subarray(end + 4, total)
      buf = buf.subarray(total)
      onResponse(status, body)
    }
  }
}

export interface RateResult {
  due: number
  completed: number
  errors: number
  /** Connections the server closed during the run (each replaced at once). */
  closedByServer: number
  /** Answers that came on a connection with no request in flight (not timed, not in `statuses`). */
  unsolicited: number
  /** Requests never sent: still waiting for a free connection at the end (counted in `errors`). */
  unsent: number
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
 * Stops on its own: requests still unanswered `drainMs` after the end are counted as errors.
 */
export async function constantRate(options: {
  port: number
  request: RequestSpec
  rate: number
  durationMs: number
  connections: number
  /** How long answers are awaited after the last request was due (default 1 s); later ones are errors. */
  drainMs?: number
  /** Called with each answer to a request sent (its status and body as framed), to judge more than the status. */
  inspect?: (status: number, body: Buffer) => void
}): Promise<RateResult> {
  const bytes = requestBytes(options.port, options.request)
  const latencies = new Float64Array(Math.ceil((options.rate * options.durationMs) / 1000) + 16)
  let n = 0
  let completed = 0
  let errors = 0
  let closedByServer = 0
  let unsolicited = 0
  let finished = false
  const statuses: Record<number, number> = {}
  const idle: Conn[] = []
  const backlog: number[] = []
  let backlogHead = 0

  interface Conn {
    socket: Socket
    /** When the request in flight was due; undefined while the connection is idle. */
    dueAt: number | undefined
  }
  const conns = new Set<Conn>()
  /**
   * A keep-alive connection. One the server closes (its keep-alive timeout, a restart) is replaced,
   * and a request it had in flight counts as an error: the load goes on at the same rate.
   */
  const open = () =>
    new Promise<void>((resolve, reject) => {
      let connected = false
      const socket = connect(options.port, '127.0.0.1', () => {
        connected = true
        release(conn)
        resolve()
      })
      socket.setNoDelay(true)
      const conn: Conn = { socket, dueAt: undefined }
      conns.add(conn)
      socket.once('error', reject)
      socket.on('error', () => undefined)
      socket.on('close', () => {
        conns.delete(conn)
        const i = idle.indexOf(conn)
        if (i >= 0) idle.splice(i, 1)
        if (finished || !connected) return
        closedByServer++
        if (conn.dueAt !== undefined) errors++
        open().catch(() => errors++)
      })
      socket.on('data', (chunk: Buffer) => read(chunk))
      const read = responseReader((status, body) => {
        // An answer to nothing sent (a 408 on an idle connection): counted, not timed.
        if (conn.dueAt === undefined) {
          unsolicited++
          return
        }
        latencies[n++] = performance.now() - conn.dueAt
        conn.dueAt = undefined
        completed++
        statuses[status] = (statuses[status] ?? 0) + 1
        options.inspect?.(status, body)
        release(conn)
      })
    })
  await Promise.all(Array.from({ length: options.connections }, open))

  function send(conn: Conn, dueAt: number) {
    conn.dueAt = dueAt
    conn.socket.write(bytes)
  }
  /** A connection just became idle: it takes the oldest request waiting, if any. */
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
  const deadline = performance.now() + (options.drainMs ?? 1000)
  while (completed + errors < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5))
  finished = true
  for (const c of conns) c.socket.destroy()
  const sorted = latencies.subarray(0, n).sort()
  return {
    due: total,
    completed,
    errors: errors + (total - completed - errors > 0 ? total - completed - errors : 0),
    closedByServer,
    unsolicited,
    unsent: backlog.length - backlogHead,
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
