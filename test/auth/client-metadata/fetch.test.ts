import assert from 'node:assert/strict'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { localhostCertificate } from '../../support/localhost-certificate.ts'
import { DocumentFetchError, DocumentFetcher, freshnessOf } from '../../../src/auth/client-metadata/fetch.ts'

test('freshness: max-age, Expires against Date, no-store and no-cache as none, silence as unknown', () => {
  const now = Date.parse('2026-01-01T00:00:00Z')
  assert.equal(freshnessOf({ 'cache-control': 'public, max-age=600' }, now), 600_000)
  assert.equal(freshnessOf({ 'cache-control': 'no-store' }, now), 0)
  assert.equal(freshnessOf({ 'cache-control': 'no-cache, max-age=600' }, now), 0)
  assert.equal(
    freshnessOf({ expires: 'Thu, 01 Jan 2026 00:10:00 GMT', date: 'Thu, 01 Jan 2026 00:05:00 GMT' }, now),
    300_000,
  )
  assert.equal(freshnessOf({ expires: '0' }, now), 0)
  assert.equal(freshnessOf({}, now), undefined)
})

describe('fetching a document', () => {
  let origin = ''
  let cert = ''
  let close: () => Promise<void>
  const answers = new Map<string, (res: import('node:http').ServerResponse) => void>()
  before(async () => {
    const made = localhostCertificate()
    cert = made.cert
    const server = createServer({ key: made.key, cert }, (req, res) => {
      const answer = answers.get(req.url ?? '')
      if (answer) answer(res)
      else res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => server.listen(0, resolve))
    origin = `https://localhost:${(server.address() as AddressInfo).port}`
    close = () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  })
  after(() => close?.())

  const fetcher = (privateOrigins: string[] = [origin], maxBytes = 5120) =>
    new DocumentFetcher({ maxBytes, timeoutMs: 5000, privateOrigins, ca: cert })

  test('a JSON document, with its freshness', async () => {
    answers.set('/ok.json', (res) =>
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' }).end('{"a":1}'),
    )
    const f = fetcher()
    try {
      assert.deepEqual(await f.fetch(`${origin}/ok.json`), { body: { a: 1 }, freshMs: 60_000 })
    } finally {
      await f.close()
    }
  })

  test('a loopback server is refused unless its origin is allowed to be private (checked on the resolved address)', async () => {
    const f = fetcher([])
    try {
      await assert.rejects(f.fetch(`${origin}/ok.json`), (e: Error) => {
        assert.ok(e instanceof DocumentFetchError)
        assert.match(e.message, /private address/)
        return true
      })
      await assert.rejects(f.fetch('https://127.0.0.1:1/x.json'), /127\.0\.0\.1 is a private address/)
    } finally {
      await f.close()
    }
  })

  test('refused answers: not 200 (redirects are not followed), not JSON, too large, not parseable', async () => {
    answers.set('/moved.json', (res) => res.writeHead(302, { location: `${origin}/ok.json` }).end())
    answers.set('/html', (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>'))
    answers.set('/big.json', (res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(`"${'x'.repeat(200)}"`),
    )
    answers.set('/bad.json', (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{'))
    const f = fetcher([origin], 100)
    try {
      await assert.rejects(f.fetch(`${origin}/moved.json`), /answered 302/)
      await assert.rejects(f.fetch(`${origin}/html`), /not JSON/)
      await assert.rejects(f.fetch(`${origin}/big.json`), /larger than 100 bytes/)
      await assert.rejects(f.fetch(`${origin}/bad.json`), /not valid JSON/)
    } finally {
      await f.close()
    }
  })

  test('a certificate no trusted CA signed is refused', async () => {
    const f = new DocumentFetcher({ maxBytes: 5120, timeoutMs: 5000, privateOrigins: [origin] })
    try {
      await assert.rejects(f.fetch(`${origin}/ok.json`), DocumentFetchError)
    } finally {
      await f.close()
    }
  })
})
