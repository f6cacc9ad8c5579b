/**
 * Stand-ins for the Supabase services that cannot run on these machines (PostgREST, Storage, Edge
 * Runtime), each answering as the real service does on the paths the tests use: the same JWT
 * checks (HS256 with the project's JWT secret for the API keys, the asymmetric signing key for
 * users' tokens), the same status codes and error bodies. They are labelled as stand-ins in
 * docs/e2e.md; what they prove is authgate's routing, rewriting and key handling, not the services.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { importJWK, jwtVerify, type JWTPayload } from 'jose'
import type { SigningJwk } from '../../scripts/supabase-auth/jwt.ts'

/** The project's keys as the stand-ins verify them: set once Supabase Auth has started. */
export interface ProjectKeys {
  jwtSecret: string
  signingJwk: SigningJwk
}

export interface StandIn {
  url: string
  /** Every request as it arrived: method, target, headers. */
  requests: Array<{ method: string; target: string; headers: IncomingMessage['headers'] }>
  close(): Promise<void>
}

function base64url(input: string | Buffer): string {
  return Buffer.from(input).toString('base64url')
}

/** An HS256 API key (anon or service_role) signed with the project's JWT secret, as Supabase issues them. */
export function signApiKey(secret: string, role: 'anon' | 'service_role'): string {
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))
  const payload = base64url(JSON.stringify({ role, iss: 'supabase', iat: 1_700_000_000, exp: 4_000_000_000 }))
  return `${header}.${payload}.${createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')}`
}

/** Verifies a bearer token as PostgREST and Storage do: the JWT secret for HS256, the JWKS otherwise. */
async function verify(keys: ProjectKeys, token: string): Promise<JWTPayload> {
  // The public half only, without `key_ops` (WebCrypto refuses `sign` on a public key).
  const { kty, crv, x, y } = keys.signingJwk
  const publicJwk = { kty, crv, x, y }
  const { payload } = await jwtVerify(token, async (header) =>
    header.alg === 'HS256' ? new TextEncoder().encode(keys.jwtSecret) : importJWK(publicJwk, header.alg),
  )
  return payload
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
  res.end(JSON.stringify(body))
}

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<StandIn> {
  const requests: StandIn['requests'] = []
  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', target: req.url ?? '', headers: req.headers })
    handler(req, res).catch((err: Error) => json(res, 500, { message: err.message }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function bearer(req: IncomingMessage): string | undefined {
  const m = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')
  return m?.[1]
}

/**
 * The description PostgREST v12 answers `GET /` with (Swagger 2.0) for the stand-in's one table,
 * `todos (id bigint primary key, title text not null, user_id uuid)`, with the comment
 * "Things to do" on the table, in the shape PostgREST writes: row filters, `select`, `order`,
 * `Range`, `Prefer` and the table's body as shared parameters, paths referring to them.
 */
export function postgrestSwagger(host = '0.0.0.0:3000'): Record<string, unknown> {
  const rowFilters = ['id', 'title', 'user_id'].map((c) => ({ $ref: `#/parameters/rowFilter.todos.${c}` }))
  const ref = (name: string) => ({ $ref: `#/parameters/${name}` })
  const filter = (name: string, format: string) => ({ name, required: false, format, in: 'query', type: 'string' })
  const prefer = (values: string[]) => ({
    name: 'Prefer',
    description: 'Preference',
    required: false,
    enum: values,
    in: 'header',
    type: 'string',
  })
  const mediaTypes = [
    'application/json',
    'application/vnd.pgrst.object+json;nulls=stripped',
    'application/vnd.pgrst.object+json',
    'text/csv',
  ]
  return {
    swagger: '2.0',
    info: { description: '', title: 'standard public schema', version: '12.2.3' },
    host,
    basePath: '/',
    schemes: ['http'],
    consumes: mediaTypes,
    produces: mediaTypes,
    paths: {
      '/': {
        get: {
          produces: ['application/openapi+json', 'application/json'],
          responses: { '200': { description: 'OK' } },
          summary: 'OpenAPI description (this document)',
          tags: ['Introspection'],
        },
      },
      '/todos': {
        get: {
          parameters: [
            ...rowFilters,
            ref('select'),
            ref('order'),
            ref('range'),
            ref('rangeUnit'),
            ref('offset'),
            ref('limit'),
            ref('preferCount'),
          ],
          responses: {
            '200': { description: 'OK', schema: { items: { $ref: '#/definitions/todos' }, type: 'array' } },
            '206': { description: 'Partial Content' },
          },
          summary: 'Things to do',
          tags: ['todos'],
        },
        post: {
          parameters: [ref('body.todos'), ref('select'), ref('preferPost')],
          responses: { '201': { description: 'Created' } },
          summary: 'Things to do',
          tags: ['todos'],
        },
        delete: {
          parameters: [...rowFilters, ref('preferReturn')],
          responses: { '204': { description: 'No Content' } },
          summary: 'Things to do',
          tags: ['todos'],
        },
        patch: {
          parameters: [...rowFilters, ref('body.todos'), ref('preferReturn')],
          responses: { '204': { description: 'No Content' } },
          summary: 'Things to do',
          tags: ['todos'],
        },
      },
    },
    definitions: {
      todos: {
        description: 'Things to do',
        required: ['id', 'title'],
        properties: {
          id: { description: 'Note:\nThis is a Primary Key.<pk/>', format: 'bigint', type: 'integer' },
          title: { format: 'text', type: 'string' },
          user_id: { format: 'uuid', type: 'string' },
        },
        type: 'object',
      },
    },
    parameters: {
      preferParams: prefer(['params=single-object']),
      preferReturn: prefer(['return=representation', 'return=minimal', 'return=none']),
      preferCount: prefer(['count=none']),
      preferPost: prefer([
        'return=representation',
        'return=minimal',
        'return=none',
        'resolution=ignore-duplicates',
        'resolution=merge-duplicates',
      ]),
      select: { name: 'select', description: 'Filtering Columns', required: false, in: 'query', type: 'string' },
      on_conflict: { name: 'on_conflict', description: 'On Conflict', required: false, in: 'query', type: 'string' },
      order: { name: 'order', description: 'Ordering', required: false, in: 'query', type: 'string' },
      range: { name: 'Range', description: 'Limiting and Pagination', required: false, in: 'header', type: 'string' },
      rangeUnit: {
        name: 'Range-Unit',
        description: 'Limiting and Pagination',
        required: false,
        default: 'items',
        in: 'header',
        type: 'string',
      },
      offset: { name: 'offset', description: 'Limiting and Pagination', required: false, in: 'query', type: 'string' },
      limit: { name: 'limit', description: 'Limiting and Pagination', required: false, in: 'query', type: 'string' },
      'body.todos': {
        name: 'todos',
        description: 'todos',
        required: false,
        in: 'body',
        schema: { $ref: '#/definitions/todos' },
      },
      'rowFilter.todos.id': filter('id', 'bigint'),
      'rowFilter.todos.title': filter('title', 'text'),
      'rowFilter.todos.user_id': filter('user_id', 'uuid'),
    },
    externalDocs: { description: 'PostgREST Documentation', url: 'https://postgrest.org/en/v12/references/api.html' },
  }
}

/**
 * PostgREST (v12/v13) on one table, `todos (id, title, user_id)`, with the row-level security of
 * the usual "owner only" policy: the role and the user come from the verified JWT (no token: the
 * anon role), errors are PostgREST's (`PGRST301` for a token it cannot verify, `PGRST303` for an
 * expired one, `42501` for a policy violation: 401 as anon, 403 as a user, `PGRST205` for an
 * unknown table), counts and ranges in `Content-Range`.
 */
export function startPostgrestStandIn(keys: () => ProjectKeys): Promise<StandIn> {
  const rows: Array<{ id: number; title: string; user_id: string }> = []
  return serve(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const token = bearer(req)
    let claims: JWTPayload = { role: 'anon' }
    if (token !== undefined) {
      try {
        claims = await verify(keys(), token)
      } catch (err) {
        const expired = (err as { code?: string }).code === 'ERR_JWT_EXPIRED'
        return json(
          res,
          401,
          expired
            ? { code: 'PGRST303', details: null, hint: null, message: 'JWT expired' }
            : { code: 'PGRST301', details: null, hint: null, message: 'No suitable key or wrong key type' },
          { 'www-authenticate': 'Bearer error="invalid_token"' },
        )
      }
    }
    // The description (PostgREST's `openapi-mode` default, follow-privileges: every role here may read todos).
    if (url.pathname === '/' && req.method === 'GET') {
      return json(res, 200, postgrestSwagger(), { 'content-type': 'application/openapi+json; charset=utf-8' })
    }
    if (url.pathname !== '/todos')
      return json(res, 404, {
        code: 'PGRST205',
        details: null,
        hint: "Perhaps you meant the table 'public.todos'",
        message: `Could not find the table 'public.${url.pathname.slice(1)}' in the schema cache`,
      })
    const role = String(claims.role)
    const mine = rows.filter((r) => role === 'service_role' || r.user_id === claims.sub)
    if (req.method === 'GET') {
      const range = mine.length === 0 ? '*/0' : `0-${mine.length - 1}/${mine.length}`
      return json(res, 200, mine, { 'content-range': range })
    }
    if (req.method === 'POST') {
      const body = JSON.parse((await readBody(req)).toString()) as { title: string } | Array<{ title: string }>
      if (role !== 'authenticated' && role !== 'service_role') {
        const denial = {
          code: '42501',
          details: null,
          hint: null,
          message: 'new row violates row-level security policy for table "todos"',
        }
        return json(res, role === 'anon' ? 401 : 403, denial)
      }
      const added = (Array.isArray(body) ? body : [body]).map((b) => ({
        id: rows.length + 1,
        title: b.title,
        user_id: String(claims.sub),
      }))
      rows.push(...added)
      const wants = String(req.headers.prefer ?? '').includes('return=representation')
      if (wants) return json(res, 201, added, { 'content-range': `*/*` })
      res.writeHead(201, { 'content-range': '*/*' }).end()
      return
    }
    json(res, 405, { code: 'PGRST117', details: null, hint: null, message: `Unsupported HTTP method: ${req.method}` })
  })
}

/**
 * Supabase Storage on one private bucket whose policy lets a signed-in user write and read under
 * their own user id. Its quirks as the real server has them: an RLS denial on an object route is
 * HTTP 400 with `"statusCode":"403"` in the body; a request without a usable Authorization is
 * refused (an empty one fails as a malformed JWT); signed URLs need none, their token is in the
 * query.
 */
export function startStorageStandIn(keys: () => ProjectKeys): Promise<StandIn> {
  const objects = new Map<string, { type: string; body: Buffer; owner: string }>()
  const storageError = (res: ServerResponse, statusCode: string, error: string, message: string) =>
    json(res, 400, { statusCode, error, message })
  return serve(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const signed = /^\/object\/sign\/(.+)$/.exec(url.pathname)
    // Storage verifies any Authorization it is sent, a signed URL's request's too: an empty one
    // (S3-style presigned clients send it) fails as a malformed JWT. Supabase's gateway removes it.
    if (req.headers.authorization !== undefined && req.headers.authorization.trim() === '')
      return storageError(res, '403', 'Unauthorized', 'jwt malformed')
    if (signed && req.method === 'GET') {
      const token = url.searchParams.get('token') ?? ''
      const [payload, sig] = token.split('.')
      const expected = createHmac('sha256', keys().jwtSecret)
        .update(payload ?? '')
        .digest('base64url')
      const key = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString() || '{}') as { url?: string }
      if (sig !== expected || key.url !== signed[1]) return storageError(res, '400', 'InvalidJWT', 'invalid signature')
      const object = objects.get(signed[1]!)
      if (!object) return storageError(res, '404', 'not_found', 'Object not found')
      res.writeHead(200, { 'content-type': object.type, 'content-length': String(object.body.length) })
      res.end(object.body)
      return
    }
    const authorization = req.headers.authorization
    if (authorization === undefined)
      return storageError(res, '400', 'Error', "headers must have required property 'authorization'")
    let claims: JWTPayload
    try {
      claims = await verify(keys(), bearer(req) ?? '')
    } catch {
      return storageError(res, '403', 'Unauthorized', 'jwt malformed')
    }
    const owner = String(claims.sub ?? '')
    const allowed = (path: string) => claims.role === 'service_role' || path.startsWith(`docs/${owner}/`)
    if (signed && req.method === 'POST') {
      const path = signed[1]!
      if (!objects.has(path) || !allowed(path)) return storageError(res, '404', 'not_found', 'Object not found')
      const payload = base64url(JSON.stringify({ url: path }))
      const token = `${payload}.${createHmac('sha256', keys().jwtSecret).update(payload).digest('base64url')}`
      return json(res, 200, { signedURL: `/object/sign/${path}?token=${token}` })
    }
    const object = /^\/object\/(?:authenticated\/)?(.+)$/.exec(url.pathname)
    if (!object) return storageError(res, '404', 'not_found', 'Route not found')
    const path = decodeURIComponent(object[1]!)
    if (req.method === 'POST' || req.method === 'PUT') {
      const body = await readBody(req)
      if (!allowed(path)) return storageError(res, '403', 'Unauthorized', 'new row violates row-level security policy')
      objects.set(path, { type: req.headers['content-type'] ?? 'application/octet-stream', body, owner })
      return json(res, 200, { Id: randomUUID(), Key: path })
    }
    if (req.method === 'GET') {
      const found = objects.get(path)
      if (!found || !allowed(path)) return storageError(res, '404', 'not_found', 'Object not found')
      res.writeHead(200, { 'content-type': found.type, 'content-length': String(found.body.length) })
      res.end(found.body)
      return
    }
    storageError(res, '405', 'Error', 'Method not allowed')
  })
}

/**
 * Edge Runtime's main service with one function, `hello`, deployed with JWT verification on (the
 * default): a missing or bad token is 401 `{"msg":"Invalid JWT"}`; otherwise it answers with the
 * name it was sent and the caller's role.
 */
export function startFunctionsStandIn(keys: () => ProjectKeys): Promise<StandIn> {
  return serve(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname !== '/hello')
      return json(res, 404, { code: 'NOT_FOUND', message: 'Requested function was not found' })
    let claims: JWTPayload
    try {
      claims = await verify(keys(), bearer(req) ?? '')
    } catch {
      return json(res, 401, { msg: 'Invalid JWT' })
    }
    const body = JSON.parse((await readBody(req)).toString() || '{}') as { name?: string }
    json(res, 200, { message: `Hello ${body.name ?? 'world'}`, role: claims.role })
  })
}

/** What the Realtime stand-in saw of one socket: the handshake and the Phoenix messages. */
export interface RealtimeStandIn extends StandIn {
  handshakes: Array<{ target: string; headers: IncomingMessage['headers'] }>
  /** Decoded client messages, `[join_ref, ref, topic, event, payload]`. */
  messages: unknown[][]
}

/** One server text frame (RFC 6455 §5.2: FIN, opcode 1, unmasked). */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text)
  const head =
    payload.length < 126
      ? Buffer.from([0x81, payload.length])
      : Buffer.from([0x81, 126, payload.length >> 8, payload.length & 0xff])
  return Buffer.concat([head, payload])
}

/** Complete client frames at the front of `buffer` (masked, as clients must send them), and the rest. */
function readFrames(buffer: Buffer): { frames: Array<{ opcode: number; payload: Buffer }>; rest: Buffer } {
  const frames: Array<{ opcode: number; payload: Buffer }> = []
  let at = 0
  for (;;) {
    if (buffer.length - at < 2) break
    const opcode = buffer[at]! & 0x0f
    let length = buffer[at + 1]! & 0x7f
    let offset = at + 2
    if (length === 126) {
      if (buffer.length - at < 4) break
      length = buffer.readUInt16BE(at + 2)
      offset += 2
    } else if (length === 127) {
      if (buffer.length - at < 10) break
      length = Number(buffer.readBigUInt64BE(at + 2))
      offset += 8
    }
    if (buffer.length < offset + 4 + length) break
    const mask = buffer.subarray(offset, offset + 4)
    const payload = Buffer.from(buffer.subarray(offset + 4, offset + 4 + length))
    for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!
    frames.push({ opcode, payload })
    at = offset + 4 + length
  }
  return { frames, rest: buffer.subarray(at) }
}

/**
 * Realtime's Phoenix socket (serializer 2.0.0: JSON arrays in text frames) for one tenant: the
 * handshake is refused (403) unless `x-api-key` is a valid API key and `Host` names the tenant, as
 * Realtime's `UserSocket.connect` does; joins are answered `ok` when their `access_token` (if any)
 * verifies, heartbeats answered, and once a channel is joined the stand-in sends one broadcast on it.
 */
export async function startRealtimeStandIn(keys: () => ProjectKeys, tenant: string): Promise<RealtimeStandIn> {
  const handshakes: RealtimeStandIn['handshakes'] = []
  const messages: unknown[][] = []
  const server = createServer((_req, res) => json(res, 426, { message: 'upgrade required' }))
  const sockets = new Set<Duplex>()
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    void (async () => {
      handshakes.push({ target: req.url ?? '', headers: req.headers })
      const key = String(req.headers['x-api-key'] ?? '')
      const host = String(req.headers.host ?? '')
        .split(':')[0]!
        .split('.')[0]
      let ok = host === tenant
      try {
        const claims = await verify(keys(), key)
        ok &&= claims.role === 'anon' || claims.role === 'service_role'
      } catch {
        ok = false
      }
      if (!ok) {
        socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n')
        return
      }
      const accept = createHash('sha1')
        .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
        .digest('base64')
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      )
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      socket.on('error', () => socket.destroy())
      let pending: Buffer = Buffer.alloc(0)
      const send = (message: unknown[]) => socket.write(textFrame(JSON.stringify(message)))
      socket.on('data', (chunk: Buffer) => {
        const { frames, rest } = readFrames(Buffer.concat([pending, chunk]))
        pending = rest
        for (const frame of frames) {
          if (frame.opcode === 0x8) return void socket.end(Buffer.from([0x88, 0]))
          if (frame.opcode === 0x9) {
            socket.write(Buffer.concat([Buffer.from([0x8a, frame.payload.length]), frame.payload]))
            continue
          }
          if (frame.opcode !== 0x1) continue
          const message = JSON.parse(frame.payload.toString()) as [
            string | null,
            string,
            string,
            string,
            Record<string, unknown>,
          ]
          messages.push(message)
          const [joinRef, ref, topic, event, payload] = message
          if (event === 'phx_join') {
            const token = payload.access_token
            void (typeof token === 'string' ? verify(keys(), token) : Promise.resolve({})).then(
              () => {
                send([joinRef, ref, topic, 'phx_reply', { status: 'ok', response: { postgres_changes: [] } }])
                send([
                  null,
                  null,
                  topic,
                  'broadcast',
                  { type: 'broadcast', event: 'hello', payload: { from: 'realtime' } },
                ])
              },
              () =>
                send([joinRef, ref, topic, 'phx_reply', { status: 'error', response: { reason: 'Invalid token' } }]),
            )
          } else {
            send([joinRef, ref, topic, 'phx_reply', { status: 'ok', response: {} }])
          }
        }
      })
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: [],
    handshakes,
    messages,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
