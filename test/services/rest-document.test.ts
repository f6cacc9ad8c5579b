import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { test } from 'node:test'
import { postgrestSwagger } from '../../e2e/support/service-stand-ins.ts'
import { SERVICE, withServices } from './support.ts'

function logLines(): { stream: Writable; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      done()
    },
  })
  return { stream, lines }
}

test("the document carries PostgREST's description, fetched with the service key, and follows it as it changes", async () => {
  let swagger = postgrestSwagger()
  const h = await withServices({ restDocumentRefreshMs: 100 })
  try {
    h.upstream.handler = (req, res) => {
      if (req.url === '/rest/') {
        res.writeHead(200, { 'content-type': 'application/openapi+json; charset=utf-8' })
        res.end(JSON.stringify(swagger))
        return
      }
      res.writeHead(404).end()
    }
    let doc = await (await fetch(`${h.url}/openapi.json`)).json()
    for (let i = 0; i < 100 && doc.paths['/rest/v1/todos'] === undefined; i++) {
      await new Promise((r) => setTimeout(r, 50))
      doc = await (await fetch(`${h.url}/openapi.json`)).json()
    }
    assert.deepEqual(doc.paths['/rest/v1/todos'].get.tags, ['Database (PostgREST)'])
    assert.ok(doc.paths['/auth/signup'], "authgate's own routes are there as before")
    assert.ok(doc.tags.some((t: { name: string }) => t.name === 'Database (PostgREST)'))
    assert.ok(doc.components.schemas['rest.todos'])
    const asked = h.upstream.requests.find((r) => r.target === '/rest/')!
    assert.equal(asked.headers.apikey, SERVICE)
    assert.equal(asked.headers.authorization, `Bearer ${SERVICE}`)
    const v30 = await (await fetch(`${h.url}/openapi-3.0.json`)).json()
    assert.equal(v30.openapi, '3.0.3')
    assert.ok(v30.paths['/rest/v1/todos'])

    // A table added to the database: on the page at the next refresh, without a restart.
    swagger = postgrestSwagger() as typeof swagger
    ;(swagger.paths as Record<string, unknown>)['/notes'] = (swagger.paths as Record<string, unknown>)['/todos']
    for (let i = 0; i < 100 && doc.paths['/rest/v1/notes'] === undefined; i++) {
      await new Promise((r) => setTimeout(r, 50))
      doc = await (await fetch(`${h.url}/openapi.json`)).json()
    }
    assert.ok(doc.paths['/rest/v1/notes'])
  } finally {
    await h.close()
  }
})

test('a description that cannot be fetched leaves the document as it was, with a log line', async () => {
  const log = logLines()
  const h = await withServices({ restDocumentRefreshMs: 60_000 }, {}, { logger: { stream: log.stream } })
  try {
    const doc = await (await fetch(`${h.url}/openapi.json`)).json()
    assert.ok(doc.paths['/auth/signup'])
    assert.equal(
      Object.keys(doc.paths).some((p) => p.startsWith('/rest/')),
      false,
    )
    const line = log.lines.find((l) => String(l.msg).includes("REST service's description could not be fetched"))
    assert.ok(line, 'a log line says why')
    assert.equal(line.level, 40)
    assert.match(String((line.err as { message: string }).message), /not a Swagger 2\.0 document|answered/)
  } finally {
    await h.close()
  }
})

test('off: the description is not asked for', async () => {
  const h = await withServices({ restDocumentRefreshMs: false }, {}, { openapi: {} })
  try {
    await fetch(`${h.url}/openapi.json`)
    assert.equal(
      h.upstream.requests.some((r) => r.target === '/rest/'),
      false,
    )
  } finally {
    await h.close()
  }
})
