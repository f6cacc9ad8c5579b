/**
 * Realtime clients for the soak: each holds one Phoenix socket (vsn 2.0.0 frames) through authgate,
 * joins a channel, sends a broadcast every second and a heartbeat every 25 s, and counts the echoes.
 * A socket that closes while the run goes on is opened again after realtime-js's back-off (1, 2, 5,
 * then 10 s), as the library does; a handshake refused while Realtime is down is retried the same way.
 *
 * Every socket is accounted for: opened, and closed with the close code it got (1006 when it ended
 * without a close frame), and whether the client got it back (resumed).
 */

/** realtime-js's reconnect schedule (RealtimeClient's reconnectAfterMs). */
const BACK_OFF_MS = [1000, 2000, 5000, 10_000]
const HEARTBEAT_MS = 25_000
const BROADCAST_MS = 1000

export interface SocketCounts {
  clients: number
  opened: number
  /** Handshakes that did not open (refused, or the upstream down). */
  failedAttempts: number
  /** Close codes of the sockets that had opened, closed by the other side while the run went on. */
  closedByServer: Record<number, number>
  /** Close codes of the sockets the clients closed at the end (1000 asked). */
  closedAtEnd: Record<number, number>
  /** Server-side closes after which the client had its socket open again. */
  resumed: number
  /** Server-side closes without a close frame (1006). */
  endedWithoutClose: number
  /** Sockets still open when the run gave up waiting for their close at the end. */
  neverClosed: number
  /** Clients without an open socket at the end of the load (a close not resumed). */
  notResumed: number
  framesSent: number
  framesReceived: number
  /** Frames sent on a socket that closed before their echo came (Phoenix is at-most-once). */
  framesInFlightAtClose: number
}

export class RealtimeClients {
  readonly #url: string
  readonly #count: number
  #stopping = false
  readonly #clients: Client[] = []
  readonly counts: SocketCounts

  constructor(url: string, count: number) {
    this.#url = url
    this.#count = count
    this.counts = {
      clients: count,
      opened: 0,
      failedAttempts: 0,
      closedByServer: {},
      closedAtEnd: {},
      resumed: 0,
      endedWithoutClose: 0,
      neverClosed: 0,
      notResumed: 0,
      framesSent: 0,
      framesReceived: 0,
      framesInFlightAtClose: 0,
    }
  }

  /** Opens every client's socket; resolves when all are open (or throws after `timeoutMs`). */
  async start(timeoutMs = 30_000): Promise<void> {
    for (let i = 0; i < this.#count; i++) this.#clients.push(new Client(this, i))
    const deadline = performance.now() + timeoutMs
    while (this.#clients.some((c) => !c.isOpen)) {
      if (performance.now() > deadline) throw new Error('the Realtime sockets did not all open')
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  get url(): string {
    return this.#url
  }

  get stopping(): boolean {
    return this.#stopping
  }

  /** How many clients have an open socket now. */
  openNow(): number {
    return this.#clients.filter((c) => c.isOpen).length
  }

  /** Each client closes its socket with 1000; resolves when all closed or after `timeoutMs`. */
  async stop(timeoutMs = 10_000): Promise<void> {
    this.counts.notResumed = this.#clients.filter((c) => !c.isOpen).length
    this.#stopping = true
    for (const c of this.#clients) c.close()
    const deadline = performance.now() + timeoutMs
    while (this.#clients.some((c) => c.isOpen) && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 50))
    this.counts.neverClosed = this.#clients.filter((c) => c.isOpen).length
    for (const c of this.#clients) c.destroy()
  }
}

class Client {
  readonly #owner: RealtimeClients
  readonly #topic: string
  #ws: WebSocket | undefined
  #ref = 0
  #tries = 0
  /** Refs sent and not yet echoed on the current socket. */
  readonly #inFlight = new Set<string>()
  #broadcast: NodeJS.Timeout | undefined
  #heartbeat: NodeJS.Timeout | undefined
  #retry: NodeJS.Timeout | undefined
  /** The previous socket was closed by the server: the next open is a resumption. */
  #resuming = false
  isOpen = false

  constructor(owner: RealtimeClients, index: number) {
    this.#owner = owner
    this.#topic = `realtime:soak-${index}`
    this.#connect()
  }

  #send(topic: string, event: string, payload: string, joinRef: string | null = '1') {
    const ref = String(++this.#ref)
    // vsn 2.0.0: [join_ref, ref, topic, event, payload]. Kept under 126 bytes (the stand-in's frames).
    this.#ws!.send(`[${joinRef === null ? 'null' : `"${joinRef}"`},"${ref}","${topic}","${event}",${payload}]`)
    this.#inFlight.add(ref)
    this.#owner.counts.framesSent++
  }

  #connect() {
    const ws = new WebSocket(this.#owner.url)
    this.#ws = ws
    let opened = false
    ws.onopen = () => {
      opened = true
      this.isOpen = true
      this.#tries = 0
      this.#owner.counts.opened++
      if (this.#resuming) this.#owner.counts.resumed++
      this.#resuming = false
      this.#ref = 0
      this.#send(this.#topic, 'phx_join', '{"config":{"broadcast":{"self":true}}}')
      this.#broadcast = setInterval(
        () => this.#send(this.#topic, 'broadcast', `{"type":"broadcast","event":"m","payload":{"n":${this.#ref}}}`),
        BROADCAST_MS,
      )
      this.#heartbeat = setInterval(() => this.#send('phoenix', 'heartbeat', '{}', null), HEARTBEAT_MS)
    }
    ws.onmessage = (event) => {
      const ref = /^\[(?:null|"[^"]*"),"([^"]+)"/.exec(String(event.data))?.[1]
      if (ref !== undefined && this.#inFlight.delete(ref)) this.#owner.counts.framesReceived++
    }
    ws.onerror = () => undefined
    ws.onclose = (event) => {
      clearInterval(this.#broadcast)
      clearInterval(this.#heartbeat)
      this.isOpen = false
      const counts = this.#owner.counts
      if (!opened) counts.failedAttempts++
      else {
        counts.framesInFlightAtClose += this.#inFlight.size
        const byCode = this.#owner.stopping ? counts.closedAtEnd : counts.closedByServer
        byCode[event.code] = (byCode[event.code] ?? 0) + 1
        if (!this.#owner.stopping) {
          this.#resuming = true
          if (event.code === 1006) counts.endedWithoutClose++
        }
      }
      this.#inFlight.clear()
      if (this.#owner.stopping) return
      const wait = BACK_OFF_MS[Math.min(this.#tries++, BACK_OFF_MS.length - 1)]!
      this.#retry = setTimeout(() => this.#connect(), wait)
    }
  }

  close() {
    clearTimeout(this.#retry)
    if (this.isOpen) this.#ws?.close(1000)
  }

  destroy() {
    clearTimeout(this.#retry)
    clearInterval(this.#broadcast)
    clearInterval(this.#heartbeat)
  }
}
