import { createServer, type Server } from 'node:http'
import { randomUUID } from 'node:crypto'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'

export const ISSUER = 'http://localhost:8080/auth'

export interface SigningKey {
  kid: string
  privateKey: CryptoKey
  publicJwk: JWK
}

export async function makeKey(alg: 'ES256' | 'RS256' = 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  const kid = randomUUID()
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } }
}

/** Claims like Supabase Auth's access tokens. */
export function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    sub: '8d0b1f0e-5c4e-4a5e-9a44-0b0b6f4c3b11',
    aud: 'authenticated',
    role: 'authenticated',
    email: 'ada@example.com',
    phone: '',
    app_metadata: { provider: 'email', providers: ['email'] },
    user_metadata: { plan: 'free' },
    aal: 'aal1',
    amr: [{ method: 'password', timestamp: 1700000000 }],
    session_id: '2c7b3f1e-1d2a-4c9a-8b8e-3a8f9e0d1c2b',
    is_anonymous: false,
    ...overrides,
  }
}

export async function sign(
  key: SigningKey,
  overrides: Record<string, unknown> = {},
  options: { issuer?: string; expiresIn?: string | number; kid?: string; issuedAt?: number } = {},
): Promise<string> {
  const jwt = new SignJWT(claims(overrides))
    .setProtectedHeader({ alg: key.publicJwk.alg!, kid: options.kid ?? key.kid, typ: 'JWT' })
    .setIssuer(options.issuer ?? ISSUER)
    .setIssuedAt(options.issuedAt)
  jwt.setExpirationTime(options.expiresIn ?? '1h')
  return jwt.sign(key.privateKey)
}

export async function signHs256(secret: string, overrides: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims(overrides))
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(secret))
}

/** A stand-in for Supabase Auth's key set and `GET /user`, counting the calls. */
export interface KeyServer {
  url: string
  keys: JWK[]
  jwksCalls: number
  userCalls: number
  /** Session ids that GET /user answers 403 session_not_found for. */
  endedSessions: Set<string>
  down: boolean
  close(): Promise<void>
}

export async function startKeyServer(keys: JWK[]): Promise<KeyServer> {
  const state = {
    keys,
    jwksCalls: 0,
    userCalls: 0,
    endedSessions: new Set<string>(),
    down: false,
  }
  const server: Server = createServer((req, res) => {
    if (state.down) {
      res.writeHead(503).end()
      return
    }
    if (req.url === '/.well-known/jwks.json') {
      state.jwksCalls++
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=600' })
      res.end(JSON.stringify({ keys: state.keys }))
      return
    }
    if (req.url === '/user') {
      state.userCalls++
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '')
      const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString() || '{}') as {
        session_id?: string
      }
      if (payload.session_id && state.endedSessions.has(payload.session_id)) {
        res.writeHead(403, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ code: 403, error_code: 'session_not_found', msg: 'Session does not exist' }))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"x"}')
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no address')
  return Object.assign(state, {
    url: `http://127.0.0.1:${address.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  })
}
