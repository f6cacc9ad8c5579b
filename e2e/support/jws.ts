import { createPublicKey, verify, type JsonWebKey } from 'node:crypto'

export interface JwsParts {
  header: { alg?: string; kid?: string; typ?: string; [name: string]: unknown }
  payload: Record<string, unknown>
}

function decodeSegment(segment: string | undefined): Record<string, unknown> {
  if (segment === undefined) throw new Error('not a compact JWS')
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>
}

export function decodeJws(token: string): JwsParts {
  const [header, payload] = token.split('.')
  return { header: decodeSegment(header) as JwsParts['header'], payload: decodeSegment(payload) }
}

const NODE_ALGORITHMS: Record<string, { hash: string; dsaEncoding?: 'ieee-p1363' }> = {
  ES256: { hash: 'sha256', dsaEncoding: 'ieee-p1363' },
  RS256: { hash: 'sha256' },
}

/**
 * Verifies a compact JWS against a JWK Set the way a relying party does: key chosen by `kid`, the
 * algorithm taken from the key (never trusted from the token alone). Returns the payload.
 */
export function verifyJwsWithJwks(
  token: string,
  jwks: { keys: Array<JsonWebKey & { kid?: string; alg?: string }> },
): Record<string, unknown> {
  const { header, payload } = decodeJws(token)
  const key = jwks.keys.find((candidate) => candidate.kid === header.kid)
  if (key === undefined) throw new Error(`no key ${String(header.kid)} in the JWKS`)
  if (key.alg !== header.alg) throw new Error(`token alg ${String(header.alg)} differs from key alg ${String(key.alg)}`)
  const algorithm = NODE_ALGORITHMS[key.alg ?? '']
  if (algorithm === undefined) throw new Error(`unsupported alg ${String(key.alg)}`)
  const [encodedHeader, encodedPayload, signature] = token.split('.')
  const publicKey = createPublicKey({ key, format: 'jwk' })
  const valid = verify(
    algorithm.hash,
    Buffer.from(`${encodedHeader}.${encodedPayload}`),
    algorithm.dsaEncoding ? { key: publicKey, dsaEncoding: algorithm.dsaEncoding } : publicKey,
    Buffer.from(signature ?? '', 'base64url'),
  )
  if (!valid) throw new Error('signature does not verify')
  return payload
}
