/**
 * Stand-ins for the Supabase services that cannot run on these machines (PostgREST, Storage, Edge
 * Runtime), each answering as the real service does on the paths the tests use: the same JWT
 * checks (HS256 with the project's JWT secret for the API keys, the asymmetric signing key for
 * users' tokens), the same status codes and error bodies. They are labelled as stand-ins in
 * docs/e2e.md; what they prove is authgate's routing, rewriting and key handling, not the services.
 */
import { createHmac, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { importJWK, jwtVerify, type JWTPayload } from 'jose'
import type { SigningJwk } from './jwt.ts'

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
