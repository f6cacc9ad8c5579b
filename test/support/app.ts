import type { FastifyInstance } from 'fastify'
import { buildApp, type AuthgateOptions } from '../../src/app.ts'
import type { CoreConfig } from '../../src/config.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { startFakeBackend, type FakeBackend } from './fake-backend.ts'

export interface Harness {
  app: FastifyInstance
  backend: FakeBackend
  close(): Promise<void>
}

/**
 * authgate in front of a recording fake backend. Rate limiting is off unless given: these suites
 * send many requests from one client and test forwarding (test/ratelimit tests the limiter). For
 * the same reason answers without Cache-Control are not cached unless `cacheTtlMs` is given
 * (test/proxy/response-cache.test.ts tests the cache).
 */
export async function withFakeBackend(
  config: Partial<CoreConfig> = {},
  options: AuthgateOptions = {},
): Promise<Harness> {
  const backend = await startFakeBackend()
  const app = await buildApp({
    rateLimit: false,
    ...options,
    config: { backendUrl: parseBackendUrl('test', backend.url), cacheTtlMs: 0, ...config },
  })
  await app.ready()
  return {
    app,
    backend,
    close: async () => {
      await app.close()
      await backend.close()
    },
  }
}

/** A minimal valid body per typed route with a body type. */
export const VALID_BODIES: Record<string, string> = {
  'POST /signup': '{"email":"a@example.com","password":"secret123"}',
  'POST /token': '{"email":"a@example.com","password":"secret123"}',
  'POST /otp': '{"email":"a@example.com"}',
  'POST /magiclink': '{"email":"a@example.com"}',
  'POST /verify': '{"type":"email","token":"123456","email":"a@example.com"}',
  'POST /recover': '{"email":"a@example.com"}',
  'POST /resend': '{"type":"signup","email":"a@example.com"}',
  'PUT /user': '{"data":{"name":"Ada"}}',
  'POST /reauthenticate': '{}',
  'POST /oauth/token': '{"grant_type":"authorization_code","code":"c","code_verifier":"v"}',
  'POST /oauth/clients/register': '{"redirect_uris":["http://localhost:3000/cb"]}',
  'POST /passkeys/registration/options': '{}',
  'POST /passkeys/registration/verify':
    '{"challenge_id":"8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71","credential":{"id":"x"}}',
  'POST /passkeys/authentication/options': '{}',
  'POST /passkeys/authentication/verify':
    '{"challenge_id":"8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71","credential":{"id":"x"}}',
  'PATCH /passkeys/{id}': '{"friendly_name":"Laptop"}',
  'POST /factors': '{"factor_type":"totp","friendly_name":"phone"}',
  'POST /factors/{factor_id}/challenge': '{}',
  'POST /factors/{factor_id}/verify': '{"challenge_id":"8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71","code":"123456"}',
  'POST /sso': '{"domain":"example.com","skip_http_redirect":true}',
  'POST /oauth/authorizations/{authorization_id}/consent': '{"action":"approve"}',
}
