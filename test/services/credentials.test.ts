import assert from 'node:assert/strict'
import { test } from 'node:test'
import { rawExchange, splitResponse } from '../support/raw-http.ts'
import { ANON, PUBLISHABLE, withServices } from './support.ts'

const JWT = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhZGEifQ.sig'

/** A request on a raw socket with its header lines exactly as given (a name twice is sent twice). */
async function send(port: number, target: string, lines: string[]) {
  const raw = await rawExchange(
    port,
    `GET ${target} HTTP/1.1\r\nHost: api.example.test\r\n${lines.map((l) => `${l}\r\n`).join('')}Connection: close\r\n\r\n`,
  )
  const answer = splitResponse(raw)
  return { status: Number(answer.statusLine.split(' ')[1]), body: answer.body.toString() }
}

test('a service request with two Authorization or two apikey headers is refused 400 in our shape and never forwarded', async () => {
  const h = await withServices()
  const port = Number(new URL(h.url).port)
  try {
    const targets = ['/rest/v1/todos', '/storage/v1/object/public/b/f', '/functions/v1/hello', '/realtime/v1/api/ping']
    // Realtime's Cowboy and Deno join repeated headers into one value, where authgate, PostgREST
    // and Storage read the first: which credential counts would depend on who reads it.
    const twice = [
      [`apikey: ${PUBLISHABLE}`, `Authorization: Bearer ${JWT}`, `Authorization: Bearer ${ANON}`],
      [`apikey: ${PUBLISHABLE}`, `Authorization: Bearer ${JWT}`, `authorization: Bearer ${ANON}`],
      [`apikey: ${PUBLISHABLE}`, `Authorization: Bearer ${JWT}`, 'Authorization: '],
      [`apikey: ${PUBLISHABLE}`, `apikey: ${ANON}`],
      [`apikey: ${PUBLISHABLE}`, `APIKEY: ${PUBLISHABLE}`, `Authorization: Bearer ${JWT}`],
    ]
    for (const target of targets)
      for (const lines of twice) {
        const answer = await send(port, target, lines)
        assert.equal(answer.status, 400, `${target} ${lines.join(' | ')}`)
        const body = JSON.parse(answer.body) as { code: string; message: string }
        assert.equal(body.code, 'malformed_request')
        assert.match(body.message, /one (Authorization|apikey) header/)
      }
    assert.equal(h.upstream.requests.length, 0, 'nothing forwarded')
    // One of each goes on, as always.
    for (const target of targets)
      assert.equal(
        (await send(port, target, [`apikey: ${PUBLISHABLE}`, `Authorization: Bearer ${JWT}`])).status,
        200,
        target,
      )
    assert.equal(h.upstream.requests.length, targets.length)
  } finally {
    await h.close()
  }
})
