import { createHmac, createPrivateKey, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto'

export interface SigningJwk {
  kty: string
  crv?: string
  x?: string
  y?: string
  d?: string
  kid: string
  alg: 'ES256'
  use: 'sig'
  key_ops: ['sign', 'verify']
  [member: string]: unknown
}

function base64url(input: Buffer | string): string {
  return Buffer.from(input).toString('base64url')
}

/**
 * A fresh ES256 private JWK for GOTRUE_JWT_KEYS. `alg` is required: without it Supabase Auth
 * falls back to HS256 for signing and every token it issues is unusable.
 */
export function generateSigningJwk(): SigningJwk {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = privateKey.export({ format: 'jwk' })
  return { ...jwk, kty: jwk.kty ?? 'EC', kid: randomUUID(), alg: 'ES256', use: 'sig', key_ops: ['sign', 'verify'] }
}

/** A random secret long enough for GOTRUE_JWT_SECRET (the server asks for 32+ characters). */
export function generateJwtSecret(): string {
  return randomBytes(32).toString('base64url')
}

/**
 * HS256 JWT signed with GOTRUE_JWT_SECRET and no `kid`, which is how Supabase Auth recognises a
 * token for its admin API. It is only accepted while HS256 is in GOTRUE_JWT_VALID_METHODS.
 */
export function signServiceRoleJwt(secret: string, lifetimeSeconds = 3600): string {
  const now = Math.floor(Date.now() / 1000)
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))
  const payload = base64url(
    JSON.stringify({ role: 'service_role', iss: 'authgate-e2e', iat: now, exp: now + lifetimeSeconds }),
  )
  const signature = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')
  return `${header}.${payload}.${signature}`
}

/**
 * The project's anon key as `supabase start` prints one: a JWT with the role `anon`, here signed
 * with the ES256 key Supabase Auth signs with (so PostgREST or Storage given the same key set accept
 * it), valid for ten years. It is what supabase-js takes as its key.
 */
export function signAnonJwt(jwk: SigningJwk, issuer: string): string {
  const now = Math.floor(Date.now() / 1000)
  const header = base64url(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid: jwk.kid }))
  const payload = base64url(JSON.stringify({ role: 'anon', iss: issuer, iat: now, exp: now + 10 * 365 * 86400 }))
  const key = createPrivateKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d }, format: 'jwk' })
  const signature = sign('sha256', Buffer.from(`${header}.${payload}`), { key, dsaEncoding: 'ieee-p1363' })
  return `${header}.${payload}.${base64url(signature)}`
}
