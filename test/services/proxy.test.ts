import assert from 'node:assert/strict'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import { buildApp } from '../../src/app.ts'
import { parseBackendUrl } from '../../src/config.ts'
import { startFakeBackend } from '../support/fake-backend.ts'
import { logCapture } from '../support/log-capture.ts'
import { rawExchange, splitResponse } from '../support/raw-http.ts'
import { ANON, PUBLISHABLE, SECRET, SERVICE, values, withServices } from './support.ts'

test('REST: the prefix becomes the upstream base, the query goes byte for byte, a publishable key becomes the anon JWT', async () => {
  const h = await withServices()
  try {
    const res = await fetch(`${h.url}/rest/v1/todos?select=id,name&id=eq.1&or=(a.eq.%2C,b.is.null)`, {
      headers: { apikey: PUBLISHABLE, 'x-client-info': 'supabase-js-node/2.119.1' },
    })
    assert.equal(res.status, 200)
    const r = h.upstream.requests[0]!
    assert.equal(r.target, '/rest/todos?select=id,name&id=eq.1&or=(a.eq.%2C,b.is.null)')
    assert.deepEqual(values(r, 'apikey'), [ANON])
    assert.deepEqual(values(r, 'authorization'), [`Bearer ${ANON}`])
    assert.deepEqual(values(r, 'x-client-info'), ['supabase-js-node/2.119.1'])
    assert.deepEqual(values(r, 'x-forwarded-prefix'), ['/rest/v1'])
    assert.match(values(r, 'x-request-id')[0]!, /^[0-9a-f-]{36}$/)
    assert.equal(values(r, 'x-request-id')[0], res.headers.get('x-request-id'))
  } finally {
    await h.close()
  }
})

test("REST: a user's JWT in Authorization is kept; a key there is judged and translated like the apikey", async () => {
  const h = await withServices()
  try {
    await fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE, authorization: 'Bearer user.jwt.x' } })
    assert.deepEqual(values(h.upstream.requests[0]!, 'authorization'), ['Bearer user.jwt.x'])
    await fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE, authorization: `Bearer ${SECRET}` } })
    assert.deepEqual(values(h.upstream.requests[1]!, 'authorization'), [`Bearer ${SERVICE}`])
    const bad = await fetch(`${h.url}/rest/v1/todos`, {
      headers: { apikey: PUBLISHABLE, authorization: 'Bearer sb_secret_guessed' },
    })
    assert.equal(bad.status, 401)
    assert.equal(h.upstream.requests.length, 2)
  } finally {
    await h.close()
  }
})

test('header hygiene: hop-by-hop and spoofed forwarding headers are dropped, one client IP and the link host are sent', async () => {
  const h = await withServices()
  try {
    const raw =
      'GET /rest/v1/todos HTTP/1.1\r\nHost: api.example.test\r\napikey: ' +
      PUBLISHABLE +
      '\r\nConnection: keep-alive, X-Secret-Hop\r\nX-Secret-Hop: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n' +
      'X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Host: evil.test\r\nX-Forwarded-Prefix: /evil\r\nX-Real-IP: 6.6.6.6\r\n' +
      'Proxy-Authorization: Basic eA==\r\nX-Request-Id: client-chosen\r\nConnection: close\r\n\r\n'
    const answer = splitResponse(await rawExchange(Number(new URL(h.url).port), raw))
    assert.match(answer.statusLine, / 200 /)
    const r = h.upstream.requests[0]!
    for (const name of ['x-secret-hop', 'keep-alive', 'te', 'proxy-authorization', 'x-real-ip'])
      assert.deepEqual(values(r, name), [], name)
    assert.deepEqual(values(r, 'x-forwarded-for'), ['127.0.0.1'])
    assert.deepEqual(values(r, 'x-forwarded-host'), ['api.example.test'])
    assert.deepEqual(values(r, 'x-forwarded-proto'), ['http'])
    assert.deepEqual(values(r, 'x-forwarded-prefix'), ['/rest/v1'])
    assert.notEqual(values(r, 'x-request-id')[0], 'client-chosen')
    assert.equal(values(r, 'host')[0], new URL(h.upstream.url).host)
  } finally {
    await h.close()
  }
})

test('GraphQL: /graphql/v1 is PostgREST /rpc/graphql with Content-Profile: graphql_public', async () => {
  const h = await withServices()
  try {
    const body = '{"query":"{ todosCollection { edges { node { id } } } }"}'
    const res = await fetch(`${h.url}/graphql/v1`, {
      method: 'POST',
      headers: { apikey: PUBLISHABLE, 'content-type': 'application/json', 'content-profile': 'private' },
      body,
    })
    assert.equal(res.status, 200)
    const r = h.upstream.requests[0]!
    assert.equal(r.target, '/rest/rpc/graphql')
    assert.deepEqual(values(r, 'content-profile'), ['graphql_public'])
    assert.equal(r.body.toString(), body)
    assert.equal((await fetch(`${h.url}/graphql/v1/other`, { headers: { apikey: PUBLISHABLE } })).status, 404)
  } finally {
    await h.close()
  }
})

test('Storage: an empty Authorization is removed (presigned URLs), no key is needed, bodies and ranges pass as they are', async () => {
  const h = await withServices()
  try {
    h.upstream.handler = (req, res, body) => {
      if (req.method === 'GET' && req.headers.range === 'bytes=2-4') {
        res.writeHead(206, { 'content-range': 'bytes 2-4/10', 'content-type': 'application/octet-stream' })
        res.end(Buffer.from([2, 3, 4]))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ Key: 'bucket/file', size: body.length }))
    }
    const signed = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${h.url}/storage/v1/object/upload/sign/bucket/file?token=t`, {
        method: 'PUT',
        headers: { authorization: '', 'content-type': 'application/octet-stream' },
      })
      req.on('response', (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
      req.on('error', reject)
      req.end(Buffer.alloc(1000, 7))
    })
    assert.equal(signed, 200)
    const put = h.upstream.requests[0]!
    assert.equal(put.target, '/storage/object/upload/sign/bucket/file?token=t')
    assert.deepEqual(values(put, 'authorization'), [])
    assert.deepEqual(values(put, 'apikey'), [])
    assert.deepEqual(values(put, 'content-length'), ['1000'])
    assert.ok(put.body.equals(Buffer.alloc(1000, 7)))

    const range = await fetch(`${h.url}/storage/v1/object/public/bucket/file`, { headers: { range: 'bytes=2-4' } })
    assert.equal(range.status, 206)
    assert.equal(range.headers.get('content-range'), 'bytes 2-4/10')
    assert.deepEqual([...new Uint8Array(await range.arrayBuffer())], [2, 3, 4])
  } finally {
    await h.close()
  }
})

test('a chunked upload is streamed to the upstream as it arrives', async () => {
  const h = await withServices()
  try {
    const parts = ['first,', 'second,', 'third']
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${h.url}/storage/v1/object/bucket/big`, {
        method: 'POST',
        headers: { apikey: PUBLISHABLE, 'content-type': 'text/plain', 'transfer-encoding': 'chunked' },
      })
      req.on('response', (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
      req.on('error', reject)
      // Written over time, so the request is still arriving when it is forwarded.
      let i = 0
      const next = () => (i < parts.length ? (req.write(parts[i++]), setTimeout(next, 100)) : req.end())
      next()
    })
    assert.equal(status, 200)
    const r = h.upstream.requests[0]!
    assert.equal(r.body.toString(), parts.join(''))
    assert.deepEqual(values(r, 'transfer-encoding'), ['chunked'])
    assert.deepEqual(values(r, 'authorization'), [`Bearer ${ANON}`])
  } finally {
    await h.close()
  }
})

test('functions: the key goes in sb-api-key (the client’s is dropped), Authorization is left alone, events stream as they come', async () => {
  const h = await withServices()
  try {
    let sendNext: (() => void) | undefined
    h.upstream.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: one\n\n')
      sendNext = () => res.end('data: two\n\n')
    }
    const res = await fetch(`${h.url}/functions/v1/hello?name=x`, {
      method: 'POST',
      headers: { apikey: PUBLISHABLE, 'sb-api-key': 'forged', 'content-type': 'application/json' },
      body: '{}',
    })
    assert.equal(res.headers.get('content-type'), 'text/event-stream')
    const reader = res.body!.getReader()
    const first = await reader.read()
    // The first event arrived while the function is still running.
    assert.equal(new TextDecoder().decode(first.value), 'data: one\n\n')
    sendNext!()
    let rest = ''
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      rest += new TextDecoder().decode(value)
    }
    assert.equal(rest, 'data: two\n\n')
    const r = h.upstream.requests[0]!
    assert.equal(r.target, '/functions/hello?name=x')
    assert.deepEqual(values(r, 'sb-api-key'), [ANON])
    assert.deepEqual(values(r, 'authorization'), [])
  } finally {
    await h.close()
  }
})

test('keys: missing 401 no_api_key, unknown 401 invalid_api_key (nothing forwarded); ?apikey= counts and is translated', async () => {
  const h = await withServices()
  try {
    const none = await fetch(`${h.url}/rest/v1/todos`)
    assert.equal(none.status, 401)
    assert.deepEqual(await none.json(), { code: 'no_api_key', message: 'No API key found in request' })
    const unknown = await fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: 'sb_publishable_nope' } })
    assert.equal(unknown.status, 401)
    assert.equal((await unknown.json()).code, 'invalid_api_key')
    const storageUnknown = await fetch(`${h.url}/storage/v1/object/public/b/f`, { headers: { apikey: 'nope' } })
    assert.equal(storageUnknown.status, 401)
    assert.equal(h.upstream.requests.length, 0)

    await fetch(`${h.url}/realtime/v1/api/broadcast?apikey=${PUBLISHABLE}&x=1`, { method: 'POST', body: '{}' })
    const r = h.upstream.requests[0]!
    assert.equal(r.target, `/realtime/api/broadcast?apikey=${encodeURIComponent(ANON)}&x=1`)
    assert.deepEqual(values(r, 'apikey'), [ANON])
  } finally {
    await h.close()
  }
})

test('pg-meta: the service-role key only (403 for the anon key); a secret key becomes the service-role JWT', async () => {
  const h = await withServices()
  try {
    const anon = await fetch(`${h.url}/pg/tables`, { headers: { apikey: PUBLISHABLE } })
    assert.equal(anon.status, 403)
    assert.equal((await anon.json()).code, 'service_key_required')
    const ok = await fetch(`${h.url}/pg/tables?included_schemas=public`, { headers: { apikey: SECRET } })
    assert.equal(ok.status, 200)
    const r = h.upstream.requests[0]!
    assert.equal(r.target, '/meta/tables?included_schemas=public')
    assert.deepEqual(values(r, 'apikey'), [SERVICE])
  } finally {
    await h.close()
  }
})

test("Realtime's API serves what realtime-js calls; its tenant administration in no spelling", async () => {
  const logs = logCapture()
  const h = await withServices({}, {}, { logger: { stream: logs.stream } })
  try {
    const port = Number(new URL(h.url).port)
    for (const [method, target] of [
      ['GET', '/realtime/v1/api/tenants'],
      ['GET', '/realtime/v1/api/tenants/x'],
      ['GET', '/realtime/v1/api/openapi'],
      // Phoenix drops empty segments and decodes each one: all of these reach its tenant routes.
      ['GET', '/realtime/v1/api//tenants'],
      ['GET', '/realtime/v1/api/%74enants'],
      ['GET', '/realtime/v1/api/tenants%2f'],
      ['GET', '/realtime/v1/api//openapi'],
      ['DELETE', '/realtime/v1/api/%74enants/realtime-dev'],
      ['POST', '/realtime/v1/api/tenants/realtime-dev/reload'],
    ]) {
      const answer = splitResponse(
        await rawExchange(
          port,
          `${method} ${target} HTTP/1.1\r\nHost: x\r\napikey: ${PUBLISHABLE}\r\nConnection: close\r\n\r\n`,
        ),
      )
      assert.match(answer.statusLine, / 404 /, `${method} ${target}`)
      assert.match(answer.body.toString(), /"code":"not_found"/, `${method} ${target}`)
    }
    assert.equal(h.upstream.requests.length, 0)
    const topic = await fetch(`${h.url}/realtime/v1/api/broadcast/room%3A1/events/typing?private=true`, {
      method: 'POST',
      headers: { apikey: PUBLISHABLE, 'content-type': 'application/json' },
      body: '{}',
    })
    assert.equal(topic.status, 200)
    assert.equal(h.upstream.requests[0]!.target, '/realtime/api/broadcast/room%3A1/events/typing?private=true')
    // Each refusal's log line says why.
    const refused = logs.lines.filter((l) => l.msg === 'request' && String(l.url).includes('enants'))
    assert.equal(refused.length, 7)
    for (const line of refused) {
      assert.equal(line.error, 'not_found')
      assert.match(String(line.reason), /Only what its clients call is served under \/realtime\/v1\/api/)
    }
  } finally {
    await h.close()
  }
})

test("realtime-js's own HTTP calls pass the allow-list: send before joining, and httpSend", async () => {
  const { RealtimeClient } = await import('@supabase/realtime-js')
  const h = await withServices()
  const client = new RealtimeClient(`${h.url.replace('http', 'ws')}/realtime/v1`, {
    params: { apikey: PUBLISHABLE },
  })
  // Realtime accepts a broadcast with 202 and no body.
  h.upstream.handler = (_req, res) => res.writeHead(202).end()
  try {
    const channel = client.channel('room:1', { config: { private: true } })
    // Not joined: realtime-js sends the broadcast over HTTP.
    assert.equal(await channel.send({ type: 'broadcast', event: 'typing', payload: { x: 1 } }), 'ok')
    await channel.httpSend('typing', { x: 2 })
    assert.deepEqual(
      h.upstream.requests.map((r) => `${r.method} ${r.target.split('?')[0]}`),
      ['POST /realtime/api/broadcast', 'POST /realtime/api/broadcast/room%3A1/events/typing'],
    )
  } finally {
    await client.removeAllChannels()
    client.disconnect()
    await h.close()
  }
})

test('timeouts are per service: a function slower than its timeout is 504 in our shape', async () => {
  const h = await withServices({ timeoutsMs: { functions: 150 } })
  try {
    // The function answers long after the 150 ms timeout: room for a loaded machine's event loop.
    h.upstream.handler = (_req, res) => void setTimeout(() => res.end('late'), 10_000).unref()
    const res = await fetch(`${h.url}/functions/v1/slow`, { headers: { apikey: PUBLISHABLE } })
    assert.equal(res.status, 504)
    const body = await res.json()
    assert.deepEqual(body, { code: 'request_timeout', message: 'The functions service did not answer in time' })
    assert.equal(h.app.authgateServices.config.upstreams.find((u) => u.label === 'rest')!.timeoutMs, 30_000)
  } finally {
    await h.close()
  }
})

test('an upstream that cannot be reached is 502 naming the service, never its address', async () => {
  const h = await withServices({ urls: { rest: 'http://127.0.0.1:9' } })
  try {
    const res = await fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE } })
    assert.equal(res.status, 502)
    const text = await res.text()
    assert.match(text, /The rest service could not be reached/)
    assert.doesNotMatch(text, /127\.0\.0\.1/)
  } finally {
    await h.close()
  }
})

test('a service not configured is not mounted', async () => {
  const only = await withServices({ urls: { rest: undefined, functions: undefined } } as never)
  try {
    assert.equal((await fetch(`${only.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE } })).status, 404)
    assert.equal((await fetch(`${only.url}/functions/v1/x`, { headers: { apikey: PUBLISHABLE } })).status, 404)
  } finally {
    await only.close()
  }
})

test('hosted: every service at its own path on the project, the configured key when the client sends none', async () => {
  const upstream = await startFakeBackend()
  const h = { upstream }
  const app = await buildApp({
    rateLimit: false,
    config: { backendUrl: parseBackendUrl('t', `${h.upstream.url}/auth/v1`), backendApiKey: PUBLISHABLE },
    services: { supabaseUrl: h.upstream.url, restDocumentRefreshMs: false },
  })
  try {
    await app.inject({ method: 'GET', url: '/rest/v1/todos?select=*' })
    await app.inject({
      method: 'POST',
      url: '/graphql/v1',
      payload: '{}',
      headers: { 'content-type': 'application/json' },
    })
    await app.inject({ method: 'GET', url: '/storage/v1/bucket', headers: { apikey: 'sb_secret_server' } })
    const pg = await app.inject({ method: 'GET', url: '/pg/tables' })
    assert.equal(pg.statusCode, 404, 'pg-meta is not served for hosted projects')
    const [rest, graphql, storage] = h.upstream.requests
    assert.equal(rest!.target, '/rest/v1/todos?select=*')
    assert.deepEqual(values(rest!, 'apikey'), [PUBLISHABLE])
    assert.deepEqual(values(rest!, 'authorization'), [`Bearer ${PUBLISHABLE}`])
    assert.equal(graphql!.target, '/graphql/v1')
    assert.deepEqual(values(graphql!, 'content-profile'), [], "the project's gateway adds it")
    assert.deepEqual(values(storage!, 'apikey'), ['sb_secret_server'], "a client's own key is kept")
  } finally {
    await app.close()
    await h.upstream.close()
  }
})

test('CORS: preflights answered by authgate, the answer exposes Content-Range, the upstream’s CORS headers are not relayed', async () => {
  const h = await withServices({}, { corsOrigins: ['https://app.example.com'] })
  try {
    h.upstream.handler = (_req, res) => {
      res.writeHead(200, { 'access-control-allow-origin': '*', 'content-range': '0-0/1' })
      res.end('[]')
    }
    const pre = await fetch(`${h.url}/rest/v1/todos`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'PATCH',
        'access-control-request-headers': 'apikey,authorization,prefer',
      },
    })
    assert.equal(pre.status, 204)
    assert.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example.com')
    assert.equal(h.upstream.requests.length, 0)
    const res = await fetch(`${h.url}/rest/v1/todos`, {
      headers: { origin: 'https://app.example.com', apikey: PUBLISHABLE },
    })
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example.com')
    assert.match(res.headers.get('access-control-expose-headers')!, /Content-Range/)
    const other = await fetch(`${h.url}/rest/v1/todos`, {
      headers: { origin: 'https://evil.test', apikey: PUBLISHABLE },
    })
    assert.equal(other.headers.get('access-control-allow-origin'), null)
  } finally {
    await h.close()
  }
})

test('metrics and the request log name the service route', async () => {
  const h = await withServices()
  try {
    await fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE } })
    await fetch(`${h.url}/storage/v1/object/public/b/f`)
    const text = await (await fetch(`${h.url}/metrics`)).text()
    assert.match(text, /authgate_http_requests_total\{[^}]*route="\/rest\/v1\/\*"[^}]*\} 1/)
    assert.match(text, /authgate_backend_request_duration_seconds_count\{[^}]*route="\/storage\/v1\/\*"[^}]*\} 1/)
  } finally {
    await h.close()
  }
})

test('readiness reports each upstream (probed once per upstream) and the metrics follow them', async () => {
  const h = await withServices({ urls: { rest: undefined, meta: undefined, storage: 'http://127.0.0.1:9' } } as never)
  try {
    h.upstream.handler = (req, res) => {
      res.writeHead(req.url === '/functions/' ? 503 : 401)
      res.end()
    }
    const res = await fetch(`${h.url}/readyz`)
    assert.equal(res.status, 200, 'reported, not followed (D24)')
    const body = await res.json()
    assert.deepEqual(body.services, { storage: 'down', functions: 'down', realtime: 'up' })
    const probed = h.upstream.probes.map((p) => p.target).filter((t) => t !== '/auth/health')
    assert.deepEqual(probed.sort(), ['/functions/', '/realtime/api/'])
    const text = await (await fetch(`${h.url}/metrics`)).text()
    assert.match(text, /authgate_dependency_up\{dependency="realtime"\} 1/)
    assert.match(text, /authgate_dependency_up\{dependency="storage"\} 0/)
  } finally {
    await h.close()
  }
})

test('with readiness following dependencies, a service down makes the instance not ready', async () => {
  const h = await withServices({ urls: { storage: 'http://127.0.0.1:9' } }, { readinessFollowsDependencies: true })
  try {
    h.upstream.handler = (_req, res) => res.writeHead(200).end()
    const res = await fetch(`${h.url}/readyz`)
    assert.equal(res.status, 503)
    assert.equal((await res.json()).services.storage, 'down')
  } finally {
    await h.close()
  }
})

test('a client that leaves cancels the upstream request; an upstream that breaks off cuts the client', async () => {
  let upstreamClosed: () => void = () => {}
  const closed = new Promise<void>((resolve) => (upstreamClosed = resolve))
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' })
    res.write(Buffer.alloc(1024))
    if (req.url === '/object/b/broken') setTimeout(() => res.destroy(), 50)
    else res.on('close', () => upstreamClosed())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const h = await withServices({ urls: { storage: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } })
  try {
    const controller = new AbortController()
    const res = await fetch(`${h.url}/storage/v1/object/b/endless`, { signal: controller.signal })
    assert.equal(res.status, 200)
    controller.abort()
    await closed
    const broken = await fetch(`${h.url}/storage/v1/object/b/broken`)
    assert.equal(broken.status, 200)
    await assert.rejects(broken.arrayBuffer())
  } finally {
    await h.close()
    server.closeAllConnections()
    server.close()
  }
})

test('a path with dot segments is refused (it could leave the service for another, e.g. the admin API)', async () => {
  const h = await withServices()
  try {
    const port = Number(new URL(h.url).port)
    for (const target of [
      '/rest/v1/../../auth/v1/admin/users',
      '/storage/v1/object/%2e%2e/%2E%2E/auth/v1/admin/users',
      '/rest/v1/a%2f..%2fb',
      '/functions/v1/x/.',
      '/rest/v1/a%5c..%5cb',
      // Double-encoded: harmless behind one decoding layer, an escape behind two.
      '/rest/v1/%252e%252e/%252e%252e/auth/v1/admin/users',
      '/storage/v1/object/%25%32%65%25%32%65/x',
    ]) {
      const raw = await rawExchange(
        port,
        `GET ${target} HTTP/1.1\r\nHost: x\r\napikey: ${PUBLISHABLE}\r\nConnection: close\r\n\r\n`,
      )
      const answer = splitResponse(raw)
      assert.match(answer.statusLine, / 400 /, target)
      assert.match(answer.body.toString(), /"code":"validation_failed"/, target)
    }
    assert.equal(h.upstream.requests.length, 0)
    const fine = await fetch(`${h.url}/storage/v1/object/public/b/a..b.txt`)
    assert.equal(fine.status, 200)
    assert.equal(h.upstream.requests[0]!.target, '/storage/object/public/b/a..b.txt')
  } finally {
    await h.close()
  }
})

test("the names authgate sets on a service request are among undici's well-known ones, and are sent as before", async () => {
  const known = createRequire(import.meta.url)('undici/lib/core/constants.js').headerNameLowerCasedRecord as Record<
    string,
    string | undefined
  >
  const h = await withServices()
  try {
    for (const name of ['x-forwarded-prefix', 'apikey', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto'])
      assert.equal(known[name], name)
    await fetch(`${h.url}/rest/v1/todos`, { headers: { apikey: PUBLISHABLE } })
    const names = h.upstream.requests[0]!.rawHeaders.filter((_, i) => i % 2 === 0)
    for (const name of ['x-forwarded-prefix', 'apikey', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto'])
      assert.ok(names.includes(name), name)
  } finally {
    await h.close()
  }
})
