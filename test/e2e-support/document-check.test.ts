import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkAnswers, type Observed } from '../../e2e/support/document-check.ts'

/** The end-to-end suite's document check reports what the document does not describe. */
const doc = {
  paths: {
    '/auth/user': {
      get: {
        responses: {
          '200': {
            content: {
              'application/json': {
                schema: { $ref: '#/components/schemas/User' },
              },
            },
          },
          '303': { headers: { Location: { required: true } } },
          '4XX': { content: { 'application/json': { schema: { type: 'object', required: ['code'] } } } },
        },
      },
    },
    '/auth/passkeys/{id}': { delete: { responses: { '204': {} } } },
  },
  components: {
    schemas: { User: { type: 'object', properties: { id: { type: 'string', format: 'uuid' } }, required: ['id'] } },
  },
}

const answer = (method: string, target: string, status: number, body: unknown, headers = {}): Observed => ({
  method,
  target,
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body: Buffer.from(body === undefined ? '' : JSON.stringify(body)),
  forwarded: true,
})

test('documented answers pass; status ranges and path templates are matched', () => {
  const r = checkAnswers(doc, [
    answer('GET', '/auth/user?x=1', 200, { id: '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71' }),
    answer('GET', '/auth/user', 403, { code: 403 }),
    answer('GET', '/auth/user', 303, undefined, { location: '/x' }),
    answer('DELETE', '/auth/passkeys/abc', 204, undefined),
    answer('GET', '/auth/nope', 404, { code: 404 }),
  ])
  assert.deepEqual(r.problems, [])
  assert.equal(r.checked, 4)
  assert.equal(r.outside, 1)
})

test('an undocumented status, a body off its schema, a missing required header and a 204 body are reported', () => {
  const r = checkAnswers(doc, [
    answer('DELETE', '/auth/passkeys/abc', 404, { code: 404 }),
    answer('GET', '/auth/user', 200, { id: 'not-a-uuid' }),
    answer('GET', '/auth/user', 303, undefined),
    answer('DELETE', '/auth/passkeys/abc', 204, { x: 1 }),
    answer('GET', '/auth/user', 200, 'text', { 'content-type': 'text/plain' }),
  ])
  assert.equal(r.problems.length, 5, r.problems.join('\n'))
  assert.match(r.problems[0]!, /status not documented/)
  assert.match(r.problems[1]!, /body does not match the schema: \/id must match format "uuid"/)
  assert.match(r.problems[2]!, /required header Location missing/)
  assert.match(r.problems[3]!, /204 with a body/)
  assert.match(r.problems[4]!, /content type "text\/plain" not documented/)
})
