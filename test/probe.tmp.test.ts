import { test } from 'node:test'
import { withServices, PUBLISHABLE } from './services/support.ts'
import { rawExchange, splitResponse } from './support/raw-http.ts'

test('probe', async () => {
  const h = await withServices()
  const port = Number(new URL(h.url).port)
  const targets = process.env.T!.split(' ')
  for (const t of targets) {
    const before = h.upstream.requests.length
    const raw = await rawExchange(port, `GET ${t} HTTP/1.1\r\nHost: x\r\napikey: ${PUBLISHABLE}\r\nConnection: close\r\n\r\n`)
    const a = splitResponse(raw)
    const got = h.upstream.requests.slice(before).map((r) => r.target)
    console.log(t.padEnd(50), a.statusLine.slice(9, 12), JSON.stringify(a.body.toString().slice(0, 90)), '=>', got.join(','))
  }
  await h.close()
})
