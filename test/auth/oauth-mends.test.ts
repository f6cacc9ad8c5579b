import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { completeClientRegistration } from '../../src/auth/oauth-mends.ts'
import type { HeldAnswer } from '../../src/core/held-answer.ts'

const answer = (status: number, body: string, headers = ['Content-Type', 'application/json']): HeldAnswer => ({
  status,
  headers,
  body: Buffer.from(body),
})

describe('completeClientRegistration (RFC 7591 §3.2.1)', () => {
  test('a 201 that issues a secret gets client_secret_expires_at 0, the rest byte for byte', () => {
    const body = '{"client_id":"c1","client_secret":"s\\u00e9","grant_types":["authorization_code"]}\n'
    const out = completeClientRegistration(answer(201, body))
    assert.equal(
      out.body.toString(),
      '{"client_id":"c1","client_secret":"s\\u00e9","grant_types":["authorization_code"],"client_secret_expires_at":0}',
    )
    assert.equal(JSON.parse(out.body.toString()).client_secret_expires_at, 0)
    assert.equal(out.status, 201)
  })

  for (const [name, a] of [
    ['a public client (no secret)', answer(201, '{"client_id":"c1","client_type":"public"}')],
    ['an answer that has the expiry', answer(201, '{"client_secret":"s","client_secret_expires_at":1800000000}')],
    ['an error', answer(400, '{"code":400,"error_code":"validation_failed","msg":"x","client_secret":"s"}')],
    ['a body that is not JSON', answer(201, 'client_secret=s', ['content-type', 'text/plain'])],
    ['malformed JSON', answer(201, '{"client_secret":"s"')],
    ['a JSON array', answer(201, '[{"client_secret":"s"}]')],
  ] as const) {
    test(`${name} is left as it came`, () => {
      const a2 = a as HeldAnswer
      assert.equal(completeClientRegistration(a2), a2)
    })
  }
})
