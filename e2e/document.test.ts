import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Ajv2020Module from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { Ajv as AjvInstance } from 'ajv'
import fc from 'fast-check'
import { withoutNulls } from '../src/auth/types/nullable.ts'
import { arbitraryFor } from './support/schema-arbitrary.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const Ajv2020 = (Ajv2020Module as unknown as { default: new (options: object) => AjvInstance }).default
const addFormats = addFormatsModule as unknown as (ajv: AjvInstance) => AjvInstance

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }

type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, unknown> } }

const JSON_HEADERS = { 'content-type': 'application/json' }

/**
 * authgate's document against the real Supabase Auth: its examples succeed, the inputs that made
 * Supabase Auth fail are answered 400 before reaching it, its 405s are Supabase Auth's, and
 * requests generated from its own schemas never get a 5xx of authgate's own nor a 400 of authgate's
 * own. Every answer here is also judged against the document when the stack stops
 * (e2e/support/document-check.ts), so the backend's answers to generated input must all be documented.
 */
describe("authgate's document against the real Supabase Auth", () => {
  let stack: Stack
  let doc: Doc
  let base = ''

  before(async () => {
    if (unavailable !== undefined) return
    stack = await startStack({ database: 'authgate_e2e_document' })
    base = `${stack.url}/auth`
    doc = (await (await fetch(`${stack.url}/openapi.json`)).json()) as Doc
  })

  after(async () => {
    await stack?.stop()
  })

  /** A fresh confirmed user's access token (signed up with Supabase Auth directly). */
  async function userToken(tag: string): Promise<string> {
    const res = await fetch(`${stack.backend.url}/signup`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({
        email: `${tag}-${Math.random().toString(36).slice(2)}@example.com`,
        password: 'correct-horse-battery-7',
      }),
    })
    const body = (await res.json()) as { access_token?: string }
    assert.ok(body.access_token, JSON.stringify(body))
    return body.access_token
  }

  it("every documented whole-request example succeeds, in the document's order", needsBackend, async () => {
    let token = ''
    let sent = 0
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!path.startsWith('/auth/')) continue
      for (const [method, op] of Object.entries(item)) {
        const examples = op.requestBody?.content?.['application/json']?.examples as
          Record<string, { value: unknown; 'x-query'?: Record<string, string> }> | undefined
        if (!examples) continue
        const bearer = (op.security as Array<Record<string, unknown>>).some((r) => 'bearerAuth' in r)
        for (const [name, example] of Object.entries(examples)) {
          // The query an example needs, else the required parameters' own examples.
          const query = new URLSearchParams(
            example['x-query'] ??
              Object.fromEntries(
                (op.parameters ?? [])
                  .filter((p: { in: string; required: boolean }) => p.in === 'query' && p.required)
                  .map((p: { name: string; example: string }) => [p.name, p.example]),
              ),
          )
          const res = await fetch(`${stack.url}${path}${query.size > 0 ? `?${query}` : ''}`, {
            method: method.toUpperCase(),
            headers: { ...JSON_HEADERS, ...(bearer ? { authorization: `Bearer ${token}` } : {}) },
            body: JSON.stringify(example.value),
          })
          const text = await res.text()
          assert.ok(res.status >= 200 && res.status < 300, `${method} ${path} "${name}": ${res.status} ${text}`)
          // The e-mail sign-up comes first; its session signs the examples that need a user.
          if (path === '/auth/signup' && name === 'email')
            token = (JSON.parse(text) as { access_token: string }).access_token
          sent++
        }
      }
    }
    assert.ok(sent >= 15, `${sent} examples sent`)
  })

  it('inputs that made Supabase Auth fail with 500 are answered 400 by authgate', needsBackend, async () => {
    const token = await userToken('pkce')
    const verify = '/verify?token=pkce_0123456789abcdef&type=unknown_type'
    assert.equal((await fetch(`${stack.backend.url}${verify}`, { redirect: 'manual' })).status, 500)
    const through = await fetch(`${base}${verify}`, { redirect: 'manual' })
    assert.equal(through.status, 400)
    assert.equal(((await through.json()) as { error_code: string }).error_code, 'validation_failed')

    const init = {
      method: 'PUT',
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify({
        email: 'new-pkce@example.com',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      }),
    }
    assert.equal((await fetch(`${stack.backend.url}/user`, init)).status, 500)
    const user = await fetch(`${base}/user`, init)
    assert.equal(user.status, 400)
    assert.equal(
      ((await user.json()) as { msg: string }).msg,
      'PKCE flow requires code_challenge_method and code_challenge',
    )
  })

  it("answers 405 with Supabase Auth's Allow on its paths for another method", needsBackend, async () => {
    const token = await userToken('methods')
    const cases: Array<[string, string]> = [
      ['PATCH', '/settings'],
      ['POST', '/user'],
      ['GET', '/passkeys/abc'],
      ['HEAD', '/health'],
    ]
    for (const [method, path] of cases) {
      const headers = { authorization: `Bearer ${token}` }
      const straight = await fetch(`${stack.backend.url}${path}`, { method, headers })
      const through = await fetch(`${base}${path}`, { method, headers })
      await straight.body?.cancel()
      await through.body?.cancel()
      assert.equal(straight.status, 405, `${method} ${path} directly`)
      assert.equal(through.status, 405, `${method} ${path} through authgate`)
      // Supabase Auth's router lists the methods in no fixed order.
      const methods = (r: Response) => (r.headers.get('allow') ?? '').split(', ').sort()
      assert.deepEqual(methods(through), methods(straight), `${method} ${path}`)
    }
  })

  it("requests generated from the document never get a 5xx or a 400 of authgate's own", needsBackend, async () => {
    const RUNS = 30
    const ajv = addFormats(new Ajv2020({ strict: false }))
    ajv.addSchema({ $id: 'doc', ...doc })
    const components = doc.components.schemas
    const failures: string[] = []
    let sent = 0
    let backend5xx = 0
    const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')

    for (const [path, item] of Object.entries(doc.paths)) {
      if (!path.startsWith('/auth/')) continue
      for (const [method, op] of Object.entries(item)) {
        const params = (op.parameters ?? []) as Array<{ name: string; in: string; required: boolean; schema: unknown }>
        const pathParams = params.filter((p) => p.in === 'path')
        const queryParams = params.filter((p) => p.in === 'query')
        const media = op.requestBody?.content?.['application/json']
        const bodyRequired = op.requestBody?.required === true
        const validBody = media
          ? ajv.compile({
              $ref: `doc#/${pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema')}`,
            })
          : undefined
        const request = fc.record({
          path: fc.tuple(...pathParams.map((p) => arbitraryFor(p.schema, components) as fc.Arbitrary<string>)),
          query: fc.tuple(
            ...queryParams.map((p) =>
              p.required
                ? (arbitraryFor(p.schema, components) as fc.Arbitrary<string>)
                : fc.option(arbitraryFor(p.schema, components) as fc.Arbitrary<string>, { nil: undefined }),
            ),
          ),
          body: media
            ? bodyRequired
              ? arbitraryFor(media.schema, components)
              : fc.option(arbitraryFor(media.schema, components), { nil: undefined })
            : fc.constant(undefined),
        })
        // Body fields a query value requires (`x-required-by-query`: JSON Schema cannot say it).
        const requiredByQuery = (op['x-required-by-query'] ?? []) as Array<{
          param: string
          value: string
          fields: string[]
        }>
        const meetsQueryRules = (r: { query: unknown[]; body: unknown }) =>
          requiredByQuery.every(({ param, value, fields }) => {
            if (r.query[queryParams.findIndex((p) => p.name === param)] !== value) return true
            const body = (r.body ?? {}) as Record<string, unknown>
            return fields.every((f) => typeof body[f] === 'string' && body[f] !== '')
          })
        const samples = fc
          .sample(request, { numRuns: RUNS * 20, seed: 20261123 })
          // A JSON null is a field not sent (docs/decisions.md, D25): a body is a valid request when
          // it is valid both as written and with its nulls removed, as Supabase Auth reads it.
          .filter((r) => r.body === undefined || (validBody!(r.body) && validBody!(withoutNulls(r.body))))
          .filter(meetsQueryRules)
          .slice(0, RUNS)
        const bearer = (op.security as Array<Record<string, unknown>>).some((r) => 'bearerAuth' in r)
        const token = bearer ? await userToken(method + path.replace(/[^a-z]/g, '')) : ''
        for (const sample of samples) {
          let url = path
          pathParams.forEach((p, i) => (url = url.replace(`{${p.name}}`, encodeURIComponent(String(sample.path[i])))))
          const query = new URLSearchParams()
          queryParams.forEach((p, i) => {
            const v = sample.query[i]
            if (v !== undefined) query.set(p.name, String(v))
          })
          const target = `${url}${query.size > 0 ? `?${query}` : ''}`
          const res = await fetch(`${stack.url}${target}`, {
            method: method.toUpperCase(),
            redirect: 'manual',
            headers: {
              ...(sample.body !== undefined ? JSON_HEADERS : {}),
              ...(bearer ? { authorization: `Bearer ${token}` } : {}),
            },
            ...(sample.body !== undefined ? { body: JSON.stringify(sample.body) } : {}),
          })
          const text = await res.text()
          sent++
          const seen = stack.observed.findLast((o) => o.method === method.toUpperCase() && o.target === target)
          const forwarded = seen?.forwarded === true
          if (res.status >= 500 && forwarded) backend5xx++
          if ((res.status >= 500 || res.status === 400) && !forwarded)
            failures.push(
              `${method.toUpperCase()} ${target} ${JSON.stringify(sample.body)} → ${res.status} from authgate: ${text.slice(0, 200)}`,
            )
        }
      }
    }
    process.stdout.write(`# generated requests: ${sent} sent, ${backend5xx} answered 5xx by Supabase Auth\n`)
    assert.ok(sent > 500, `${sent} requests`)
    assert.deepEqual(failures.slice(0, 20), [])
  })
})
