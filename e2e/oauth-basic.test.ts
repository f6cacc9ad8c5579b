import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { OAUTH_ANSWER_CASES } from '../test/support/backend-answer-cases.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

// RFC 6749 §2.3.1: each part form-encoded before the join (oauth4webapi encodes `-` as %2D).
const formEncode = (s: string) => encodeURIComponent(s).replace(/-/g, '%2D').replace(/%20/g, '+')
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}`

describe('client_secret_basic as RFC 6749 encodes it, against the real Supabase Auth', () => {
  let stack: Stack
  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_oauth_basic' })
  })
  after(async () => {
    await stack?.stop()
  })

  it(
    'Supabase Auth refuses the encoded client id on its own; through authgate the client is authenticated',
    needsBackend,
    async () => {
      const reg = await fetch(`${stack.url}/auth/oauth/clients/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          client_name: 'basic',
          redirect_uris: ['http://localhost:3000/cb'],
          token_endpoint_auth_method: 'client_secret_basic',
        }),
      })
      assert.equal(reg.status, 201)
      const client = (await reg.json()) as { client_id: string; client_secret: string }
      const token = (base: string, authorization: string) =>
        fetch(`${base}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
          body: 'grant_type=refresh_token&refresh_token=not-a-token',
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }))

      const straight = await token(stack.backend.url, basic(client.client_id, client.client_secret))
      assert.equal(straight.status, 400)
      assert.match(JSON.stringify(straight.body), /Invalid client_id format/)

      // Through authgate the client passes authentication: the answer is about the grant.
      const through = await token(`${stack.url}/auth`, basic(client.client_id, client.client_secret))
      assert.doesNotMatch(JSON.stringify(through.body), /client/i, JSON.stringify(through.body))
      // A wrong secret is still refused by Supabase Auth.
      const wrong = await token(`${stack.url}/auth`, basic(client.client_id, 'wrong-secret'))
      assert.match(JSON.stringify(wrong.body), /invalid client credentials/i)
    },
  )

  // Supabase Auth authenticates the client before it reads the grant, so each case carries a
  // registered client's credentials; authgate answers without contacting it, in the same words.
  for (const c of OAUTH_ANSWER_CASES) {
    it(`POST /oauth/token ${c.body}: the grant rule answers as Supabase Auth does`, needsBackend, async () => {
      const reg = await fetch(`${stack.backend.url}/oauth/clients/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: ['http://localhost:3000/cb'] }),
      })
      const client = (await reg.json()) as { client_id: string; client_secret: string }
      const send = async (base: string) => {
        const res = await fetch(`${base}/oauth/token`, {
          method: 'POST',
          headers: {
            'content-type': c.json ? 'application/json' : 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
          },
          body: c.body,
        })
        return {
          status: res.status,
          body: (await res.json()) as unknown,
          errorCode: res.headers.get('x-sb-error-code'),
          contentType: res.headers.get('content-type'),
          vary: res.headers.get('vary'),
        }
      }
      const straight = await send(stack.backend.url)
      assert.deepEqual(straight.body, { error: c.error, error_description: c.description })
      assert.equal(straight.status, 400)
      const through = await send(`${stack.url}/auth`)
      assert.deepEqual(through, straight)
    })
  }
})
