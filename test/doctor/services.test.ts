import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { serviceChecks } from '../../src/doctor/services.ts'
import { resolveServicesConfig } from '../../src/services/config.ts'

const jwt = (role: string, alg = 'HS256') =>
  [
    { alg, typ: 'JWT' },
    { role, iss: 'supabase' },
  ]
    .map((p) => Buffer.from(JSON.stringify(p)).toString('base64url'))
    .join('.') + '.sig'
const ANON = jwt('anon')
const SERVICE = jwt('service_role')

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() }
}

/** Supabase Auth's key set as the doctor reads it. */
const auth = (algs: string[]) => ({
  resolve: (path: string) => new URL(`http://auth.test${path}`),
  fetch: async () => new Response(JSON.stringify({ keys: algs.map((alg) => ({ alg })) })),
})

test('each upstream: reachable, the key accepted or refused as the service says, an unreachable one named', async () => {
  // PostgREST and Storage accept only the key signed with their secret: here, SERVICE.
  const rest = await serve((req, res) => {
    if (req.headers.authorization === `Bearer ${SERVICE}`) return void res.writeHead(200).end('{}')
    res.writeHead(401).end('{"code":"PGRST301","message":"No suitable key or wrong key type"}')
  })
  const storage = await serve((req, res) => {
    assert.equal(req.url, '/bucket')
    res.writeHead(400).end('{"statusCode":"403","error":"Unauthorized","message":"invalid signature"}')
  })
  try {
    const services = resolveServicesConfig({
      urls: { rest: rest.url, storage: storage.url, functions: 'http://127.0.0.1:9' },
      keys: { anon: ANON, service: SERVICE },
    })
    const findings = await serviceChecks(services, auth(['HS256']), 2000)
    const by = Object.fromEntries(findings.map((f) => [f.check, f]))
    assert.equal(by['service:rest']!.status, 'ok')
    assert.match(by['service:rest']!.message, /accepts the project's key/)
    assert.equal(by['service:storage']!.status, 'error')
    assert.match(by['service:storage']!.message, /refuses the project's key \(400/)
    assert.equal(by['service:functions']!.status, 'error')
    assert.match(by['service:functions']!.message, /cannot be reached/)
    assert.equal(by['service:functions']!.fix, 'AUTHGATE_FUNCTIONS_URL')
    assert.equal(by['signing-keys']!.status, 'ok')
    assert.equal(by['service:graphql'], undefined, "GraphQL is REST's PostgREST, checked once")
  } finally {
    rest.close()
    storage.close()
  }
})

test("swapped keys and HS256 keys beside Supabase Auth's asymmetric key set are said", async () => {
  const services = resolveServicesConfig({
    urls: { functions: 'http://127.0.0.1:9' },
    keys: { anon: SERVICE, service: ANON },
  })
  const findings = await serviceChecks(services, auth(['ES256']), 500)
  const swapped = findings.filter((f) => f.check === 'service-keys')
  assert.deepEqual(
    swapped.map((f) => f.fix),
    ['AUTHGATE_ANON_KEY', 'AUTHGATE_SERVICE_ROLE_KEY'],
  )
  assert.match(swapped[0]!.message, /are the two keys swapped/)
  const signing = findings.find((f) => f.check === 'signing-keys')!
  assert.equal(signing.status, 'warn')
  assert.match(signing.message, /ES256 .* HS256/)
})
