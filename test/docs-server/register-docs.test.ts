import assert from 'node:assert/strict'
import { test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import Fastify from 'fastify'
import { createRegistry } from '../../src/openapi/registry.ts'
import { registerDocs } from '../../src/docs-server/register-docs.ts'
import { scalarAsset } from '../../src/docs-server/scalar-asset.ts'

const ok = async () => 'ok'
/** The script's file name carries the installed package's version. */
const SCRIPT = scalarAsset().fileName

async function app(options: Parameters<typeof registerDocs>[2] = {}) {
  const a = Fastify()
  const registry = createRegistry(a)
  a.get('/items', { schema: { tags: ['Items'], summary: 'List' } }, ok)
  const routes = registerDocs(a, registry, options)
  await a.ready()
  return { a, routes }
}

test('serves the 3.1 document and its 3.0 rendering as JSON, with validators', async () => {
  const { a, routes } = await app()
  assert.deepEqual(routes, {
    openapiPath: '/openapi.json',
    openapi30Path: '/openapi-3.0.json',
    docsPath: '/docs',
    scriptPath: `/docs/${SCRIPT}`,
  })
  const r31 = await a.inject('/openapi.json')
  assert.equal(r31.statusCode, 200)
  assert.match(String(r31.headers['content-type']), /^application\/json/)
  assert.equal(r31.json().openapi, '3.1.0')
  assert.ok(r31.json().paths['/items'].get)
  const r30 = await a.inject('/openapi-3.0.json')
  assert.equal(r30.json().openapi, '3.0.3')
  assert.deepEqual(Object.keys(r30.json().paths), ['/items'])
  const again = await a.inject({ url: '/openapi.json', headers: { 'if-none-match': String(r31.headers.etag) } })
  assert.equal(again.statusCode, 304)
  assert.equal((await a.inject({ method: 'HEAD', url: '/openapi.json' })).statusCode, 200)
  await a.close()
})

test('the reference page: own HTML, hardened Scalar settings, a strict CSP with a fresh nonce', async () => {
  const { a } = await app({ info: { title: 'Shop <API>' } })
  const page = await a.inject('/docs')
  assert.equal(page.statusCode, 200)
  assert.match(String(page.headers['content-type']), /^text\/html/)
  const csp = String(page.headers['content-security-policy'])
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1]
  assert.ok(nonce, csp)
  for (const directive of [
    "default-src 'none'",
    `script-src 'self' 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
  ]) {
    assert.ok(csp.includes(directive), directive)
  }
  assert.equal(page.headers['cache-control'], 'no-store')
  const html = page.body
  assert.ok(html.includes('<title>Shop &#60;API&#62;</title>'))
  assert.ok(html.includes(`<script nonce="${nonce}">`))
  assert.ok(html.includes(`src="./docs/${SCRIPT}"`))
  const config = JSON.parse(/createApiReference\('#api-reference-root', (.*)\)<\/script>/.exec(html)![1]!)
  assert.equal(config.url, './openapi.json')
  assert.equal(config.withDefaultFonts, false)
  assert.equal(config.telemetry, false)
  assert.equal(config.showDeveloperTools, 'never')
  assert.deepEqual(config.agent, { disabled: true })
  assert.deepEqual(config.mcp, { disabled: true })
  assert.equal(config.proxyUrl, undefined)
  assert.equal(html.includes('https://'), false, 'no outside URL in the page')
  const second = await a.inject('/docs')
  assert.notEqual(/'nonce-([^']+)'/.exec(String(second.headers['content-security-policy']))?.[1], nonce)
  await a.close()
})

test('the privacy settings cannot be overridden through extra Scalar options', async () => {
  const { a } = await app({
    scalar: {
      theme: 'moon',
      telemetry: true,
      withDefaultFonts: true,
      proxyUrl: 'https://proxy.scalar.com',
      agent: { key: 'k' },
      showDeveloperTools: 'always',
    },
  })
  const config = JSON.parse(
    /createApiReference\('#api-reference-root', (.*)\)<\/script>/.exec((await a.inject('/docs')).body)![1]!,
  )
  assert.equal(config.theme, 'moon')
  assert.deepEqual(
    [config.telemetry, config.withDefaultFonts, config.proxyUrl, config.agent, config.showDeveloperTools],
    [false, false, undefined, { disabled: true }, 'never'],
  )
  await a.close()
})

test("Scalar's script is served from the npm package: cached for a year, gzip when accepted, 304 on a match", async () => {
  const { a, routes } = await app()
  const plain = await a.inject(routes.scriptPath as string)
  assert.equal(plain.statusCode, 200)
  assert.match(String(plain.headers['content-type']), /^text\/javascript/)
  assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable')
  assert.ok(plain.rawPayload.length > 1_000_000)
  assert.ok(plain.body.includes('createApiReference'))
  const gz = await a.inject({ url: routes.scriptPath as string, headers: { 'accept-encoding': 'gzip, deflate, br' } })
  assert.equal(gz.headers['content-encoding'], 'gzip')
  assert.ok(gunzipSync(gz.rawPayload).equals(plain.rawPayload))
  const cached = await a.inject({
    url: routes.scriptPath as string,
    headers: { 'if-none-match': String(plain.headers.etag) },
  })
  assert.equal(cached.statusCode, 304)
  await a.close()
})

test('paths are configurable (e.g. /api/openapi.json and /api/reference) and links stay relative', async () => {
  const { a, routes } = await app({ openapiPath: '/api/openapi.json', docsPath: '/api/reference' })
  assert.deepEqual(routes, {
    openapiPath: '/api/openapi.json',
    openapi30Path: '/api/openapi-3.0.json',
    docsPath: '/api/reference',
    scriptPath: `/api/reference/${SCRIPT}`,
  })
  assert.equal((await a.inject('/api/openapi.json')).statusCode, 200)
  assert.equal((await a.inject('/openapi.json')).statusCode, 404)
  const html = (await a.inject('/api/reference')).body
  assert.ok(html.includes('"url":"./openapi.json"'))
  assert.ok(html.includes(`src="./reference/${SCRIPT}"`))
  await a.close()
})

test('parts can be switched off', async () => {
  const noPage = await app({ docsPath: false, openapi30Path: false })
  assert.equal((await noPage.a.inject('/docs')).statusCode, 404)
  assert.equal((await noPage.a.inject('/openapi-3.0.json')).statusCode, 404)
  assert.equal((await noPage.a.inject('/openapi.json')).statusCode, 200)
  await noPage.a.close()
  const none = await app({ enabled: false })
  assert.equal((await none.a.inject('/openapi.json')).statusCode, 404)
  assert.equal((await none.a.inject('/docs')).statusCode, 404)
  await none.a.close()
})

test('registered inside a prefixed plugin, the routes carry the prefix', async () => {
  const a = Fastify()
  const registry = createRegistry(a)
  let routes: ReturnType<typeof registerDocs> | undefined
  await a.register(
    async (p) => {
      routes = registerDocs(p, registry)
    },
    { prefix: '/gateway' },
  )
  await a.ready()
  assert.equal(routes!.openapiPath, '/gateway/openapi.json')
  assert.equal((await a.inject('/gateway/openapi.json')).statusCode, 200)
  assert.ok((await a.inject('/gateway/docs')).body.includes(`src="./docs/${SCRIPT}"`))
  assert.equal((await a.inject(`/gateway/docs/${SCRIPT}`)).statusCode, 200)
  await a.close()
})

test('absolute servers widen connect-src so "try it" can reach them, and nothing else', async () => {
  const { a } = await app({ servers: [{ url: 'https://api.example.com/v1' }, { url: '/relative' }] })
  const csp = String((await a.inject('/docs')).headers['content-security-policy'])
  assert.ok(csp.includes("connect-src 'self' https://api.example.com;"), csp)
  await a.close()
})

test('the document is built once and rebuilt only when a route is added; ETags follow', async () => {
  const a = Fastify()
  const registry = createRegistry(a)
  a.get('/items', { schema: { tags: ['Items'] } }, ok)
  registerDocs(a, registry)
  await a.ready()
  const first = await a.inject('/openapi.json')
  const second = await a.inject('/openapi.json')
  assert.equal(second.headers.etag, first.headers.etag)
  assert.equal(second.body, first.body)
  const version = registry.version
  registry.add({ methods: ['GET'], url: '/late', schema: { tags: ['Items'] } })
  assert.equal(registry.version, version + 1)
  const third = await a.inject('/openapi.json')
  assert.notEqual(third.headers.etag, first.headers.etag)
  assert.ok(third.json().paths['/late'].get, 'a route recorded later appears')
  const stale = await a.inject({ url: '/openapi.json', headers: { 'if-none-match': String(first.headers.etag) } })
  assert.equal(stale.statusCode, 200)
  const r30 = await a.inject('/openapi-3.0.json')
  assert.ok(r30.json().paths['/late'].get)
  await a.close()
})

test('the document is served gzipped to clients that accept it, with its own ETag', async () => {
  const { a } = await app()
  const plain = await a.inject('/openapi.json')
  const zipped = await a.inject({ url: '/openapi.json', headers: { 'accept-encoding': 'br, gzip' } })
  assert.equal(zipped.headers['content-encoding'], 'gzip')
  assert.equal(plain.headers['content-encoding'], undefined)
  assert.equal(zipped.headers.vary, 'accept-encoding')
  assert.deepEqual(JSON.parse(gunzipSync(zipped.rawPayload).toString()), plain.json())
  assert.notEqual(zipped.headers.etag, plain.headers.etag)
  const again = await a.inject({
    url: '/openapi.json',
    headers: { 'accept-encoding': 'gzip', 'if-none-match': String(zipped.headers.etag) },
  })
  assert.equal(again.statusCode, 304)
  await a.close()
})
