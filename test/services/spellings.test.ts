import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { SECRET, withServices, type ServicesHarness } from './support.ts'

/**
 * Every spelling of every path each service serves or refuses, sent as raw bytes (no client
 * library normalises them on the way): a refused one is answered in authgate's error shape and
 * reaches no upstream; a served one reaches its service with the client's own bytes.
 */

/** How a spelling changes what the service's router reads (src/services/path.ts). */
type Reading =
  | 'same' // the same normal form: served wherever the path is
  | 'other' // another path once normalised: served only where the service has no allow-list
  | 'escape' // dot segments or an escaped separator: refused everywhere
  | 'prefix' // the service's prefix spelled otherwise: refused everywhere

interface Spelling {
  name: string
  reading: Reading
  /** Only the last segment changes (a parameter's value, where the service takes one there). */
  lastOnly?: boolean
  /** The target from the service's prefix and the path below it (`/tenants/x`, or '' for the prefix itself). */
  spell: (prefix: string, path: string) => string
}

const segments = (path: string) => path.split('/').slice(1)
const eachSegment = (path: string, f: (segment: string) => string) =>
  path === '' ? '' : `/${segments(path).map(f).join('/')}`
const escapeFirst = (s: string) => `%${s.charCodeAt(0).toString(16).toUpperCase()}${s.slice(1)}`

const SPELLINGS: readonly Spelling[] = [
  { name: 'as written', reading: 'same', spell: (prefix, path) => prefix + path },
  { name: 'double slashes', reading: 'same', spell: (prefix, path) => prefix + path.replaceAll('/', '//') },
  { name: 'letters %-encoded', reading: 'same', spell: (prefix, path) => prefix + eachSegment(path, escapeFirst) },
  { name: 'trailing slash', reading: 'same', spell: (prefix, path) => `${prefix}${path}/` },
  { name: 'trailing %2f', reading: 'other', lastOnly: true, spell: (prefix, path) => `${prefix}${path}%2f` },
  { name: '";" parameter', reading: 'other', lastOnly: true, spell: (prefix, path) => `${prefix}${path};x=1` },
  {
    name: 'upper case',
    reading: 'other',
    spell: (prefix, path) => prefix + eachSegment(path, (s) => s[0]!.toUpperCase() + s.slice(1)),
  },
  { name: '%2e%2e segment', reading: 'escape', spell: (prefix, path) => `${prefix}/x/%2e%2E${path}` },
  { name: '%252e%252e segment', reading: 'escape', spell: (prefix, path) => `${prefix}/x/%252e%252e${path}` },
  { name: '%25%32%65 dots', reading: 'escape', spell: (prefix, path) => `${prefix}/x/%25%32%65%25%32%65${path}` },
  { name: 'backslash dots', reading: 'escape', spell: (prefix, path) => `${prefix}/x\\..${path}` },
  { name: '%2f-encoded dots', reading: 'escape', spell: (prefix, path) => `${prefix}/x%2f..${path}` },
  { name: 'prefix after //', reading: 'prefix', spell: (prefix, path) => `/${prefix}${path}` },
  { name: 'prefix %-encoded', reading: 'prefix', spell: (prefix, path) => `/${escapeFirst(prefix.slice(1))}${path}` },
  { name: 'prefix upper case', reading: 'prefix', spell: (prefix, path) => prefix.toUpperCase() + path },
  { name: 'prefix with //', reading: 'prefix', spell: (prefix, path) => prefix.replace(/\/(?=[^/]*$)/, '//') + path },
]

interface ServicePath {
  method: string
  path: string
  served: boolean
  /** The last segment is a parameter of the served path (Realtime's event name). */
  parameterLast?: boolean
}

/** Each service's prefix, whether it serves an allow-list or is one endpoint, and its paths. */
const SERVICES: ReadonlyArray<{ prefix: string; kind: 'open' | 'allow-list' | 'exact'; paths: ServicePath[] }> = [
  {
    prefix: '/rest/v1',
    kind: 'open',
    paths: [
      { method: 'GET', path: '/todos', served: true },
      { method: 'POST', path: '/rpc/hello', served: true },
      { method: 'GET', path: '', served: true },
    ],
  },
  { prefix: '/graphql/v1', kind: 'exact', paths: [{ method: 'POST', path: '', served: true }] },
  {
    prefix: '/storage/v1',
    kind: 'open',
    paths: [
      { method: 'GET', path: '/object/public/avatars/me.svg', served: true },
      { method: 'POST', path: '/object/avatars/me.svg', served: true },
    ],
  },
  { prefix: '/functions/v1', kind: 'open', paths: [{ method: 'POST', path: '/hello', served: true }] },
  {
    prefix: '/realtime/v1/api',
    kind: 'allow-list',
    paths: [
      { method: 'POST', path: '/broadcast', served: true },
      { method: 'POST', path: '/broadcast/room-1/events/typing', served: true, parameterLast: true },
      { method: 'GET', path: '/ping', served: true },
      { method: 'GET', path: '', served: false },
      { method: 'GET', path: '/tenants', served: false },
      { method: 'POST', path: '/tenants', served: false },
      { method: 'GET', path: '/tenants/realtime-dev', served: false },
      { method: 'PUT', path: '/tenants/realtime-dev', served: false },
      { method: 'DELETE', path: '/tenants/realtime-dev', served: false },
      { method: 'POST', path: '/tenants/realtime-dev/reload', served: false },
      { method: 'POST', path: '/tenants/realtime-dev/shutdown', served: false },
      { method: 'GET', path: '/tenants/realtime-dev/health', served: false },
      { method: 'GET', path: '/openapi', served: false },
      { method: 'GET', path: '/broadcast', served: false },
    ],
  },
  { prefix: '/realtime/v1/websocket', kind: 'exact', paths: [{ method: 'GET', path: '', served: true }] },
  { prefix: '/pg', kind: 'open', paths: [{ method: 'GET', path: '/tables', served: true }] },
]

function expectServed(service: (typeof SERVICES)[number], path: ServicePath, spelling: Spelling, target: string) {
  if (spelling.reading === 'escape' || spelling.reading === 'prefix') return false
  // A spelling of the prefix itself (`/rest/v1%2f`, `/graphql/v1/`) is not the prefix.
  const after = target.charAt(service.prefix.length)
  if (!target.startsWith(service.prefix) || (after !== '' && after !== '/')) return false
  if (service.kind === 'exact') return target === service.prefix
  if (service.kind === 'allow-list')
    return path.served && (spelling.reading === 'same' || (spelling.lastOnly === true && path.parameterLast === true))
  return true
}

describe('paths in every spelling, against every service', () => {
  let h: ServicesHarness
  const agent = new Agent({ keepAlive: true, maxSockets: 4 })
  before(async () => {
    // authgate answers unrouted paths itself, as the service does (a spelling the router does not take).
    h = await withServices({}, {}, { answerUnrouted: true })
  })
  after(async () => {
    agent.destroy()
    await h.close()
  })

  const send = (method: string, target: string) =>
    new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const port = Number(new URL(h.url).port)
      const headers: Record<string, string> = { apikey: SECRET }
      if (method === 'POST' || method === 'PUT') headers['content-type'] = 'application/json'
      const req = request({ host: '127.0.0.1', port, method, path: target, headers, agent }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => (body += c))
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }))
      })
      req.on('error', reject)
      req.end(method === 'POST' || method === 'PUT' ? '{}' : undefined)
    })

  for (const service of SERVICES)
    test(`${service.prefix}: each path in each spelling`, async () => {
      const basePath = (prefix: string) =>
        h.app.authgateServices.config.upstreams.find((u) => u.row.prefix === prefix)!.basePath
      const table: string[] = []
      for (const path of service.paths)
        for (const spelling of SPELLINGS) {
          const target = spelling.spell(service.prefix, path.path)
          const what = `${path.method} ${target} (${spelling.name})`
          const before = h.upstream.requests.length
          const answer = await send(path.method, `${target}?x=1`)
          const reached = h.upstream.requests.slice(before)
          const served = expectServed(service, path, spelling, target)
          table.push(`${served ? 'served ' : 'refused'} ${answer.status} ${what}`)
          if (served) {
            assert.equal(answer.status, 200, what)
            assert.equal(reached.length, 1, what)
            // What is forwarded is the client's bytes below the prefix.
            const rest = target.slice(service.prefix.length)
            assert.equal(reached[0]!.target, `${basePath(service.prefix)}${rest}?x=1`, what)
            assert.equal(reached[0]!.method, path.method, what)
          } else {
            assert.deepEqual(reached, [], `${what} reached the upstream`)
            assert.ok(answer.status === 400 || answer.status === 404, `${what}: ${answer.status}`)
            assert.match(answer.type, /^application\/json/, what)
            const body = JSON.parse(answer.body) as Record<string, unknown>
            assert.deepEqual(Object.keys(body).sort(), ['code', 'message'], `${what}: ${answer.body}`)
            assert.ok(body.code === 'not_found' || body.code === 'validation_failed', `${what}: ${answer.body}`)
          }
        }
      // The table, for whoever reads the test's output.
      process.stdout.write(`# ${table.join('\n# ')}\n`)
    })
})
