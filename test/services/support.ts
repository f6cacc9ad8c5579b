import type { FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { buildApp, type AuthgateOptions } from '../../src/app.ts'
import type { CoreConfig } from '../../src/config.ts'
import { parseBackendUrl } from '../../src/config.ts'
import type { ServicesOptions } from '../../src/services/config.ts'
import { startFakeBackend, type FakeBackend, type Recorded } from '../support/fake-backend.ts'

export const ANON = 'eyJhbGciOiJIUzI1NiJ9.anon.sig'
export const SERVICE = 'eyJhbGciOiJIUzI1NiJ9.service.sig'
export const PUBLISHABLE = 'sb_publishable_abc123'
export const SECRET = 'sb_secret_xyz789'
export const KEYS = { anon: ANON, service: SERVICE, publishable: [PUBLISHABLE], secret: [SECRET] }

export interface ServicesHarness {
  app: FastifyInstance
  /** Every service's upstream: one recording server, each service under its own path. */
  upstream: FakeBackend
  /** http://127.0.0.1:<authgate's port> */
  url: string
  close(): Promise<void>
}

/**
 * authgate listening on a free port with every self-hosted service pointed at one recording fake
 * upstream, each under its own base path (`/rest`, `/storage`, `/functions`, `/realtime`, `/meta`)
 * so that the test sees which service a request reached and the path it reached it with.
 */
export async function withServices(
  services: Partial<ServicesOptions> = {},
  config: Partial<CoreConfig> = {},
  options: AuthgateOptions = {},
): Promise<ServicesHarness> {
  const upstream = await startFakeBackend()
  const u = upstream.url
  const app = await buildApp({
    rateLimit: false,
    ...options,
    config: { backendUrl: parseBackendUrl('test', u + '/auth'), cacheTtlMs: 0, ...config },
    services: {
      keys: KEYS,
      // PostgREST's description is not asked for unless a test wants it (test/services/rest-document.test.ts).
      restDocumentRefreshMs: false,
      ...services,
      // Each service's URL given replaces the fake upstream's; one given as undefined is not mounted.
      urls: {
        rest: `${u}/rest`,
        storage: `${u}/storage`,
        functions: `${u}/functions`,
        realtime: `${u}/realtime`,
        meta: `${u}/meta`,
        ...services.urls,
      },
    },
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  return {
    app,
    upstream,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await app.close()
      await upstream.close()
    },
  }
}

/** Every value of a header, in order, as the upstream received it. */
export function values(r: Recorded, name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < r.rawHeaders.length; i += 2)
    if (r.rawHeaders[i]!.toLowerCase() === name) out.push(r.rawHeaders[i + 1]!)
  return out
}
