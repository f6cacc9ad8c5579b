/**
 * What the bench's harnesses share (bench/run.ts, the rates, CPU and heap of each peer; and
 * bench/instructions.ts, the instructions each peer executes): the cases, how authgate and the
 * floors are started, the build of an earlier commit, and the wait for a peer's port. One
 * definition, so that both measure the same requests on the same peers configured the same way.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, symlinkSync } from 'node:fs'
import { connect } from 'node:net'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { RequestSpec } from './load.ts'
import { OBJECT_BYTES } from './peers/stand-ins.ts'
import { imageAllocatorEnv } from './allocator.ts'

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

export async function waitForPort(port: number, timeoutMs = 20_000): Promise<boolean> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy()
        resolve(true)
      })
      s.on('error', () => resolve(false))
    })
    if (ok) return true
    await sleep(100)
  }
  return false
}

/** A configuration file of bench/peers/ with its `{{NAME}}` placeholders filled in. */
export function render(template: string, vars: Record<string, string | number>): string {
  return readFileSync(join(ROOT, 'bench/peers', template), 'utf8').replace(/\{\{(\w+)\}\}/g, (_, k: string) =>
    String(vars[k]),
  )
}

// --- authgate ----------------------------------------------------------------------------------

/**
 * The compiled service's command line after `node`, as the container image runs it (Dockerfile's
 * CMD): the young generation held at 8 MiB semi-spaces. Relative to the checkout (or the baseline's
 * directory) it runs in.
 */
export const SERVICE_ARGS = ['--max-semi-space-size=8', 'dist/main.js']

/** authgate's environment in the bench: on `port`, in front of the fake backend. */
export function authgateEnv(port: number, backendPort: number): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    AUTHGATE_BACKEND_URL: `http://127.0.0.1:${backendPort}`,
    // nginx, HAProxy and Caddy run with access logs off; so does authgate (warnings and errors stay).
    AUTHGATE_LOG_LEVEL: 'warn',
    AUTHGATE_BACKEND_CONNECTIONS: '64',
    // As the container image runs it (Dockerfile): jemalloc, glibc's two arenas otherwise.
    ...imageAllocatorEnv(),
  }
}

/**
 * Forwarding cases measure forwarding: no per-IP limit, and no per-account limit on the one account
 * every request of case (a) names (it would answer 429 after ten).
 */
export const UNLIMITED = {
  AUTHGATE_RATE_LIMITED_ROUTES: 'none',
  AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES: 'POST /token=off',
}
/** The REST service mounted (case rest: PostgREST is the fake backend too) and Storage a stand-in. */
export function restEnv(backendPort: number, storagePort: number): Record<string, string> {
  return {
    AUTHGATE_REST_URL: `http://127.0.0.1:${backendPort}`,
    AUTHGATE_REST_DOCUMENT_REFRESH: 'off',
    AUTHGATE_STORAGE_URL: `http://127.0.0.1:${storagePort}`,
  }
}
/**
 * The Realtime case: the socket with cookie sessions on, so every client frame passes the stand-in
 * swap's parser (src/sessions/socket-swap.ts), as in a cookie-mode app.
 */
export function socketsEnv(realtimePort: number): Record<string, string> {
  return {
    ...UNLIMITED,
    AUTHGATE_REALTIME_URL: `http://127.0.0.1:${realtimePort}`,
    AUTHGATE_SESSIONS: 'on',
    AUTHGATE_SESSION_KEYS: `bench:${Buffer.alloc(32, 7).toString('base64')}`,
  }
}
/** The handshake of the Realtime case on authgate: a session cookie, from the page's own origin. */
export const SOCKET_PATH = '/realtime/v1/websocket?apikey=bench-publishable-key&vsn=2.0.0'
export const socketHeaders = (port: number) => ({
  Cookie: `__Host-authgate-session=${'s'.repeat(43)}`,
  Origin: `http://127.0.0.1:${port}`,
})

/**
 * The service at another commit (`--baseline <ref>`), compiled into `dir` as this checkout is
 * (node dist/main.js): a before column measures code, not type stripping. Returns the forwarding
 * cases' environment that commit accepts: one that knows no per-account limits refuses their setting.
 */
export function buildBaseline(ref: string, dir: string): Record<string, string> {
  // The sources' archive is over spawnSync's default 1 MB of output.
  const archive = spawnSync(
    'git',
    ['-C', ROOT, 'archive', ref, 'src', 'package.json', 'tsconfig.json', 'tsconfig.build.json'],
    { maxBuffer: 64 * 1024 * 1024 },
  )
  if (archive.status !== 0) throw new Error(`git archive ${ref}: ${archive.stderr.toString()}`)
  spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: dir,
    stdio: 'inherit',
  })
  const knowsAccountLimits =
    spawnSync('grep', ['-rqs', 'AUTHGATE_ACCOUNT_RATE_LIMIT_ROUTES', join(dir, 'src')]).status === 0
  return knowsAccountLimits ? UNLIMITED : { AUTHGATE_RATE_LIMITED_ROUTES: 'none' }
}

// --- the floors --------------------------------------------------------------------------------

/**
 * The floors: how fast Node.js relays and refuses with nothing of authgate's per-request work, alone
 * and behind a bare Fastify route (its request, router and hooks, nothing else).
 */
export const FLOORS = [
  { want: 'node', name: 'node:http + undici (floor)', file: 'node-floor.ts' },
  { want: 'fastify', name: 'Fastify + undici (framework floor)', file: 'fastify-floor.ts' },
  // Not a floor a case is judged by: the runtime floor answering authgate's own 429 (only with
  // `--peers answer`), to tell what the answer itself costs from what authgate does per refusal.
  { want: 'answer', name: 'node:http, authgate’s 429 (answer floor)', file: 'node-floor.ts' },
] as const
export const RUNTIME_FLOOR = FLOORS[0].name
export const FRAMEWORK_FLOOR = FLOORS[1].name

/**
 * A floor's command line after `node`. The runtime floor relays Storage's objects too, and
 * Realtime's socket as bytes over TCP.
 */
export function floorArgs(
  floor: (typeof FLOORS)[number],
  ports: { port: number; limited: number; backend: number; storage: number; socket: number; realtime: number },
): string[] {
  return [
    join(ROOT, 'bench/peers', floor.file),
    ...(floor.want === 'answer' ? ['--authgate-429'] : []),
    String(ports.port),
    String(ports.limited),
    String(ports.backend),
    ...(floor.want === 'node' ? [String(ports.storage), String(ports.socket), String(ports.realtime)] : []),
  ]
}

// --- cases -------------------------------------------------------------------------------------

export interface Case {
  id: string
  label: string
  request: RequestSpec
  /** Which port of a peer: the plain one, or the limited one (429 path). */
  limited?: boolean
  expect: number
  /** Peers that have no such thing (the OpenAPI document is authgate's own). */
  authgateOnly?: boolean
  /** Only the peers serving application routes behind the protect plugin. */
  protectOnly?: boolean
  /** Only the peers that relay Storage's objects. */
  storageOnly?: boolean
  /** Realtime's socket: messages through each peer's socket port, not HTTP requests. */
  socket?: boolean
  latency: boolean
  /**
   * The floor the case is judged against: the framework floor (Fastify + the same relay) for the
   * validated routes, the runtime floor (node:http + undici) for pass-through and refusals.
   */
  floor: 'runtime' | 'framework'
  /** What one counted thing is (a request, a MB of an object, a socket message) and how many per request. */
  unit: 'req' | 'MB' | 'msg'
  unitsPerRequest?: number
  /** wrk connections, when not --connections (a few for 10 MB objects). */
  connections?: number
}

export const OBJECT_MB = OBJECT_BYTES / 2 ** 20
const TOKEN_BODY = '{"email":"user@example.com","password":"correct-horse-battery"}'
const json = { 'Content-Type': 'application/json' }

/**
 * The bench's cases. `uploadFile` holds the upload case's body (OBJECT_BYTES); `benchToken` is the
 * access token of the protected routes' cases (bench/peers/authgate-protected.ts).
 */
export function benchCases(options: { uploadFile: string; benchToken: string }): Case[] {
  const { uploadFile, benchToken } = options
  return [
    {
      id: 'a',
      label: '(a) POST /auth/token, JSON validated',
      request: { method: 'POST', path: '/auth/token?grant_type=password', body: TOKEN_BODY, headers: json },
      expect: 200,
      latency: true,
      floor: 'framework',
      unit: 'req',
    },
    {
      id: 'b',
      label: '(b) GET /auth/settings',
      request: { method: 'GET', path: '/auth/settings' },
      expect: 200,
      latency: true,
      floor: 'framework',
      unit: 'req',
    },
    {
      id: 'b2',
      label: '(b) GET /auth/.well-known/jwks.json',
      request: { method: 'GET', path: '/auth/.well-known/jwks.json' },
      expect: 200,
      latency: false,
      floor: 'framework',
      unit: 'req',
    },
    {
      id: 'c',
      label: '(c) GET /auth/authorize (302 relay)',
      request: { method: 'GET', path: '/auth/authorize?provider=github' },
      expect: 302,
      latency: true,
      floor: 'framework',
      unit: 'req',
    },
    {
      id: 'd',
      label: '(d) POST /auth/token over the limit (429)',
      request: { method: 'POST', path: '/auth/token?grant_type=password', body: TOKEN_BODY, headers: json },
      limited: true,
      expect: 429,
      latency: true,
      floor: 'runtime',
      unit: 'req',
    },
    {
      id: 'f',
      label: '(f) GET /bench/open (application route, no check)',
      request: { method: 'GET', path: '/bench/open', headers: { authorization: `Bearer ${benchToken}` } },
      protectOnly: true,
      expect: 200,
      latency: true,
      floor: 'framework',
      unit: 'req',
    },
    {
      id: 'g',
      label: "(g) GET /bench/verified (auth: 'required', ES256, the same token again)",
      request: { method: 'GET', path: '/bench/verified', headers: { authorization: `Bearer ${benchToken}` } },
      protectOnly: true,
      expect: 200,
      latency: true,
      floor: 'framework',
      unit: 'req',
    },
    {
      id: 'rest',
      label: '(e) GET /rest/v1/todos (the REST service beside Auth, streamed)',
      request: { method: 'GET', path: '/rest/v1/todos?select=*', headers: { apikey: 'bench-publishable-key' } },
      expect: 200,
      latency: true,
      floor: 'runtime',
      unit: 'req',
    },
    {
      id: 'sd',
      label: `(e) GET /storage/v1/object (a ${OBJECT_MB} MB download)`,
      request: { method: 'GET', path: '/storage/v1/object/bench/10mb' },
      storageOnly: true,
      expect: 200,
      latency: false,
      floor: 'runtime',
      unit: 'MB',
      unitsPerRequest: OBJECT_MB,
      connections: 4,
    },
    {
      id: 'su',
      label: `(e) POST /storage/v1/object (a ${OBJECT_MB} MB upload)`,
      request: {
        method: 'POST',
        path: '/storage/v1/object/bench/upload',
        bodyFile: uploadFile,
        headers: { 'Content-Type': 'application/octet-stream' },
      },
      storageOnly: true,
      expect: 200,
      latency: false,
      floor: 'runtime',
      unit: 'MB',
      unitsPerRequest: OBJECT_MB,
      connections: 4,
    },
    {
      id: 'rt',
      label: '(e) Realtime socket, broadcast messages echoed (cookie sessions: the stand-in swap on)',
      request: { method: 'GET', path: SOCKET_PATH },
      socket: true,
      expect: 101,
      latency: false,
      floor: 'runtime',
      unit: 'msg',
    },
    {
      id: 'e',
      label: '(e) GET /openapi.json (gzip, as browsers ask)',
      request: { method: 'GET', path: '/openapi.json', headers: { 'accept-encoding': 'gzip' } },
      authgateOnly: true,
      expect: 200,
      latency: false,
      floor: 'framework',
      unit: 'req',
    },
  ]
}

/** The path a peer is asked for: the backend itself (`direct`) has no `/auth` or `/rest/v1` prefix. */
export function pathOn(c: Case, options: { direct?: boolean; socketPath?: string }): string {
  if (c.socket) return options.socketPath ?? c.request.path
  return options.direct ? c.request.path.replace(/^\/(auth|rest\/v1)/, '') : c.request.path
}
