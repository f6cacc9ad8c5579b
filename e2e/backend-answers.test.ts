import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ANSWER_CASES, BEARER_ANSWER_CASES, type AnswerCase } from '../test/support/backend-answer-cases.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

interface Answer {
  status: number
  errorCodeHeader: string | null
  contentType: string | null
  vary: string | null
  body: Record<string, unknown>
}

/**
 * Each rule of src/auth/backend-answers.ts, sent once to Supabase Auth directly and once through
 * authgate (which answers without contacting it): same status, code, message and extra fields, in
 * both error shapes.
 */
describe("authgate's validation answers are Supabase Auth's", () => {
  let stack: Stack
  let token = ''

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_answers' })
    const res = await fetch(`${stack.url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'rules@example.com', password: 'correct-horse-battery-7' }),
    })
    token = ((await res.json()) as { access_token: string }).access_token
  })

  after(async () => {
    await stack?.stop()
  })

  async function send(base: string, c: AnswerCase, bearer: boolean, apiVersion?: string): Promise<Answer> {
    const res = await fetch(base + c.url, {
      method: c.method,
      headers: {
        'content-type': 'application/json',
        ...(bearer ? { authorization: `Bearer ${token}` } : {}),
        ...(apiVersion ? { 'x-supabase-api-version': apiVersion } : {}),
      },
      body: c.body,
    })
    return {
      status: res.status,
      errorCodeHeader: res.headers.get('x-sb-error-code'),
      contentType: res.headers.get('content-type'),
      vary: res.headers.get('vary'),
      body: (await res.json()) as Record<string, unknown>,
    }
  }

  const consent: AnswerCase = {
    method: 'POST',
    url: '/oauth/authorizations/abc/consent',
    body: '{"action":"maybe"}',
    status: 400,
    code: 'validation_failed',
    message: "action must be 'approve' or 'deny'",
  }
  const cases: Array<[AnswerCase, boolean]> = [
    ...ANSWER_CASES.map((c) => [c, false] as [AnswerCase, boolean]),
    ...[...BEARER_ANSWER_CASES, consent].map((c) => [c, true] as [AnswerCase, boolean]),
  ]

  for (const [c, bearer] of cases) {
    for (const apiVersion of [undefined, '2024-01-01']) {
      it(`${c.method} ${c.url} ${c.body.slice(0, 50)} (${apiVersion ?? 'legacy shape'})`, needsBackend, async () => {
        const straight = await send(stack.backend.url, c, bearer, apiVersion)
        const through = await send(`${stack.url}/auth`, c, bearer, apiVersion)
        // The expectation in the shared table is what Supabase Auth really says ...
        assert.equal(straight.status, c.status, JSON.stringify(straight.body))
        assert.equal(apiVersion ? straight.body.code : straight.body.error_code, c.code)
        // ... and authgate says the same, field for field, header included.
        assert.deepEqual(withoutErrorId(through.body), withoutErrorId(straight.body))
        assert.equal(through.status, straight.status)
        assert.equal(through.errorCodeHeader, straight.errorCodeHeader)
        // The headers of an error answer are Supabase Auth's too: its JSON type, `Vary: Origin`.
        assert.equal(through.contentType, straight.contentType)
        assert.equal(through.vary, straight.vary)
      })
    }
  }
})

/** Supabase Auth adds a request id to 5xx bodies only; none of these is a 5xx. */
function withoutErrorId(body: Record<string, unknown>): Record<string, unknown> {
  const { error_id: _ignored, ...rest } = body
  return rest
}
