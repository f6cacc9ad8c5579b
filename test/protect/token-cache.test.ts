import assert from 'node:assert/strict'
import { after, before, describe, it, mock } from 'node:test'
import { SignJWT, UnsecuredJWT } from 'jose'
import { createTokenVerifier, TokenRejected, type VerifierOptions } from '../../src/protect/verify.ts'
import { claims, ISSUER, makeKey, sign, signHs256, startKeyServer, type KeyServer, type SigningKey } from './support.ts'

const SECRET = 'super-secret-jwt-token-with-at-least-32-characters'

function verifierFor(server: KeyServer, options: Partial<VerifierOptions> = {}) {
  return createTokenVerifier({ issuer: ISSUER, jwksUrl: new URL(`${server.url}/.well-known/jwks.json`), ...options })
}

/** The token with one character of the given part (0 header, 1 payload, 2 signature) changed. */
function alter(token: string, part: number): string {
  const parts = token.split('.')
  const p = parts[part]!
  const i = Math.floor(p.length / 2)
  parts[part] = p.slice(0, i) + (p[i] === 'A' ? 'B' : 'A') + p.slice(i + 1)
  return parts.join('.')
}

function reencodePayload(token: string, change: Record<string, unknown>): string {
  const [header, payload, signature] = token.split('.')
  const claimsOf = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>
  return [header, Buffer.from(JSON.stringify({ ...claimsOf, ...change })).toString('base64url'), signature].join('.')
}

describe('protect: the verified-token cache', () => {
  let key: SigningKey
  let server: KeyServer
  before(async () => {
    key = await makeKey()
    server = await startKeyServer([key.publicJwk])
  })
  after(() => server.close())

  it('answers a repeated token from the cache, with a copy of the claims', async () => {
    const verifier = verifierFor(server)
    const token = await sign(key)
    const first = await verifier.verify(token)
    const second = await verifier.verify(token)
    assert.equal(verifier.cache!.hits, 1)
    assert.deepEqual(second, first)
    second.role = 'service_role'
    assert.equal((await verifier.verify(token)).role, 'authenticated', 'a changed request.user stays with its request')
    first.role = 'service_role'
    assert.equal((await verifier.verify(token)).role, 'authenticated')
    assert.equal(verifier.cache!.hits, 3)
  })

  it('never answers a forged token from the cache', async () => {
    const verifier = verifierFor(server)
    const token = await sign(key)
    await verifier.verify(token)
    const forgeries = [
      alter(token, 2), // another signature
      alter(token, 1), // an edited payload
      reencodePayload(token, { role: 'service_role' }), // another role under the original signature
      reencodePayload(token, { aal: 'aal2' }),
      new UnsecuredJWT(claims()).setIssuer(ISSUER).setIssuedAt().setExpirationTime('1h').encode(), // alg none
      `${token}x`,
      token.split('.').slice(0, 2).join('.') + '.',
    ]
    for (let round = 0; round < 2; round++)
      for (const forged of forgeries)
        await assert.rejects(verifier.verify(forged), TokenRejected, `round ${round}: ${forged.slice(-20)}`)
    assert.equal(verifier.cache!.hits, 0)
    assert.equal(verifier.cache!.size, 1, 'only the valid token is remembered')
    assert.equal((await verifier.verify(token)).sub, claims().sub)
    assert.equal(verifier.cache!.hits, 1)
  })

  it('uses an entry only until the token expires', async () => {
    const verifier = verifierFor(server)
    const token = await sign(key, {}, { expiresIn: '60s' })
    const exp = (await verifier.verify(token)).exp
    mock.timers.enable({ apis: ['Date'], now: Date.now() })
    try {
      await verifier.verify(token)
      assert.equal(verifier.cache!.hits, 1)
      mock.timers.setTime(exp * 1000 + 60_000) // well past exp and the 5 s tolerance
      await assert.rejects(verifier.verify(token), /expired/)
      assert.equal(verifier.cache!.hits, 1)
      assert.equal(verifier.cache!.size, 0)
    } finally {
      mock.timers.reset()
    }
  })

  it('does not remember a token accepted within the clock tolerance after its exp', async () => {
    const verifier = verifierFor(server, { clockToleranceSeconds: 30 })
    const token = await sign(key, {}, { expiresIn: Math.floor(Date.now() / 1000) - 10 })
    await verifier.verify(token)
    await verifier.verify(token)
    assert.equal(verifier.cache!.size, 0)
    assert.equal(verifier.cache!.hits, 0)
  })

  it('ends the entries of a key removed from the set, at the first fetch of the set', async () => {
    const a = await makeKey()
    const b = await makeKey()
    const keys = await startKeyServer([a.publicJwk, b.publicJwk])
    try {
      const verifier = verifierFor(keys, { jwksCooldownMs: 0 })
      const tokenA = await sign(a)
      const tokenB = await sign(b)
      await verifier.verify(tokenA)
      await verifier.verify(tokenB)
      assert.equal(keys.jwksCalls, 1)

      // A rotation: key a removed, key c added; a token signed by c makes the set be fetched again.
      const c = await makeKey()
      keys.keys = [b.publicJwk, c.publicJwk]
      await verifier.verify(await sign(c))
      assert.equal(keys.jwksCalls, 2)

      await assert.rejects(verifier.verify(tokenA), /unknown key/, 'the removed key’s token is refused')
      const hits = verifier.cache!.hits
      await verifier.verify(tokenB)
      assert.equal(verifier.cache!.hits, hits + 1, 'a key still in the set keeps its tokens')
    } finally {
      await keys.close()
    }
  })

  it('ends the entries of a key replaced under the same kid', async () => {
    const a = await makeKey()
    const keys = await startKeyServer([a.publicJwk])
    try {
      const verifier = verifierFor(keys, { jwksCooldownMs: 0, jwksCacheMaxAgeMs: 50 })
      const token = await sign(a)
      await verifier.verify(token)
      const other = await makeKey()
      keys.keys = [{ ...other.publicJwk, kid: a.kid }]
      await new Promise((r) => setTimeout(r, 80)) // the set is stale: the next token fetches it
      await assert.rejects(verifier.verify(token), /signature/)
      assert.equal(verifier.cache!.hits, 0)
    } finally {
      await keys.close()
    }
  })

  it('verifies in full once the key set is stale, so a key removed meanwhile ends its tokens', async () => {
    const a = await makeKey()
    const keys = await startKeyServer([a.publicJwk])
    try {
      // The two first verifications must fall within the set's age: room for a loaded machine.
      const verifier = verifierFor(keys, { jwksCacheMaxAgeMs: 1_000 })
      const token = await sign(a)
      await verifier.verify(token)
      await verifier.verify(token)
      assert.equal(verifier.cache!.hits, 1)
      keys.keys = []
      await new Promise((r) => setTimeout(r, 1_100))
      await assert.rejects(verifier.verify(token), /unknown key/)
      assert.equal(keys.jwksCalls, 2)
    } finally {
      await keys.close()
    }
  })

  it('stays bounded under a flood of distinct tokens, forgetting the least recently used', async () => {
    const verifier = verifierFor(server, { tokenCache: { maxEntries: 5 } })
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => sign(key, { email: `u${i}@example.com` })))
    await verifier.verify(tokens[0]!)
    for (const t of tokens.slice(1)) {
      await verifier.verify(t)
      await verifier.verify(tokens[0]!) // kept in use, so kept
      assert.ok(verifier.cache!.size <= 5)
    }
    assert.equal(verifier.cache!.size, 5)
    const hits = verifier.cache!.hits
    await verifier.verify(tokens[1]!)
    assert.equal(verifier.cache!.hits, hits, 'an early token was forgotten')
    await verifier.verify(tokens[19]!)
    assert.equal(verifier.cache!.hits, hits + 1)
  })

  it('remembers HS256 tokens verified with the secret', async () => {
    const verifier = createTokenVerifier({ issuer: ISSUER, secret: SECRET, jwks: false })
    const token = await signHs256(SECRET)
    await verifier.verify(token)
    await verifier.verify(token)
    assert.equal(verifier.cache!.hits, 1)
    await assert.rejects(verifier.verify(await signHs256('another-secret-of-at-least-32-characters!!')), TokenRejected)
  })

  it('does not remember a token without kid verified against the key set', async () => {
    const verifier = verifierFor(server)
    const token = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(key.privateKey)
    await verifier.verify(token)
    assert.equal(verifier.cache!.size, 0)
  })

  it('can be turned off, and refuses a size that is not a positive integer', async () => {
    const verifier = verifierFor(server, { tokenCache: false })
    assert.equal(verifier.cache, undefined)
    const token = await sign(key)
    assert.equal((await verifier.verify(token)).sub, (await verifier.verify(token)).sub)
    assert.throws(() => verifierFor(server, { tokenCache: { maxEntries: 0 } }), /maxEntries/)
  })
})
