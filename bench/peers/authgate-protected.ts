/**
 * authgate with protected application routes, for the bench: `buildApp` with the protect plugin
 * and two routes answering the same small JSON, `GET /bench/open` (no check) and
 * `GET /bench/verified` (`auth: 'required'`: an ES256 access token verified locally). The key set
 * (the harness's public key, see `benchToken`) is handed to the verifier in place of Supabase Auth's.
 *
 *   node bench/peers/authgate-protected.ts <port> <public JWK as JSON> [--no-token-cache]
 */
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose'
import { buildApp } from '../../src/app.ts'
import { defineRoute } from '../../src/routes-dsl/index.ts'

export const BENCH_ISSUER = 'http://127.0.0.1/auth'

/** A key pair and an access token like Supabase Auth's (`sub`, `role`, `aal`, `session_id`, one hour). */
export async function benchToken(): Promise<{ publicJwk: JWK; token: string }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256', use: 'sig' }
  const token = await new SignJWT({
    aud: 'authenticated',
    role: 'authenticated',
    aal: 'aal1',
    session_id: '2c7b3f1e-1d2a-4c9a-8b8e-3a8f9e0d1c2b',
    email: 'user@example.com',
    app_metadata: { provider: 'email', providers: ['email'] },
    user_metadata: {},
    is_anonymous: false,
  })
    .setProtectedHeader({ alg: 'ES256', kid: 'bench', typ: 'JWT' })
    .setSubject('8d0b1f0e-5c4e-4a5e-9a44-0b0b6f4c3b11')
    .setIssuer(BENCH_ISSUER)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(privateKey)
  return { publicJwk, token }
}

if (import.meta.main) await serve()

async function serve(): Promise<void> {
  const [portArg, jwkArg, flag] = process.argv.slice(2)
  const issuer = BENCH_ISSUER
  const keySet = JSON.stringify({ keys: [JSON.parse(jwkArg!)] })

  const app = await buildApp({
    config: { backendUrl: new URL('http://127.0.0.1:9') },
    rateLimit: false,
    logger: { level: 'warn' },
    protect: {
      issuer,
      // The key set as Supabase Auth serves it, without a backend in the way.
      fetch: async () => new Response(keySet, { headers: { 'content-type': 'application/json' } }),
      tokenCache: flag === '--no-token-cache' ? false : {},
    },
  })
  const body = { ok: true }
  app.route(defineRoute({ method: 'GET', url: '/bench/open', handler: async () => body }))
  app.route(defineRoute({ method: 'GET', url: '/bench/verified', auth: 'required', handler: async () => body }))
  await app.listen({ port: Number(portArg), host: '127.0.0.1' })
}
