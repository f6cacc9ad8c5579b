import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { buildApp } from '../../src/app.ts'
import { loadOpenApiConfig } from '../../src/docs-server/config.ts'
import { registerDocs } from '../../src/docs-server/register-docs.ts'
import { forTryIt, introduction } from '../../src/docs-server/try-it.ts'
import type { OpenApiDocument } from '../../src/openapi/types.ts'
import { createRegistry } from '../../src/openapi/registry.ts'
import { authgate } from '../../src/plugin.ts'

type Json = Record<string, any>
const DEV = { email: 'dev@example.com', password: 'authgate-dev-password' }
const backendUrl = new URL('http://127.0.0.1:9')

/** The service's two documents, with application routes of each kind beside the auth routes. */
async function documents(options: Parameters<typeof buildApp>[0] = {}): Promise<{ v31: Json; v30: Json }> {
  const app = await buildApp({ rateLimit: false, config: { backendUrl }, ...options })
  app.get('/things', { schema: { summary: 'Untagged' } }, async () => [])
  app.get('/open', { schema: { tags: ['Public'], summary: 'Public' } }, async () => ({}))
  app.get('/keyed', { schema: { summary: 'Own security', security: [{ apiKey: [] }] } }, async () => ({}))
  try {
    return { v31: (await app.inject('/openapi.json')).json(), v30: (await app.inject('/openapi-3.0.json')).json() }
  } finally {
    await app.close()
  }
}

const tokenExample = (doc: Json) =>
  doc.paths['/auth/token'].post.requestBody.content['application/json'].examples.password.value

test('the document opens with an introduction: how to get a token, and the Public-tag rule', async () => {
  const { v31, v30 } = await documents()
  for (const doc of [v31, v30]) {
    const intro: string = doc.info.description
    assert.match(intro, /^## Introduction\n/)
    assert.match(intro, /`POST \/auth\/token` with `grant_type=password`/)
    assert.match(intro, /`access_token`/)
    assert.match(intro, /tagged `Public` need none/)
  }
  // Without an example user the introduction names none.
  assert.doesNotMatch(v31.info.description, /test user/)
  // An application's own description is kept as it is.
  const own = await documents({ openapi: { info: { title: 'Todo', description: 'Our API.' } } })
  assert.equal(own.v31.info.description, 'Our API.')
  // On an instance without the plugin the introduction has only the rule.
  assert.doesNotMatch(introduction(undefined), /Sign in/)
  assert.match(introduction('', DEV), /`POST \/token`.*dev@example\.com \/ authgate-dev-password/s)
})

test('the 401 an untagged application route is documented with says why; a Public route has none', async () => {
  const { v31 } = await documents()
  const untagged = v31.paths['/things'].get
  assert.deepEqual(untagged.security, [{ bearerAuth: [] }])
  assert.match(untagged.responses['401'].description, /has no `Public` tag/)
  assert.match(untagged.responses['401'].description, /Tag an open route `Public`/)
  assert.equal(v31.paths['/open'].get.responses['401'], undefined)
  // A route stating its own security, and the auth routes, keep their own descriptions.
  assert.doesNotMatch(v31.paths['/keyed'].get.responses['401'].description, /Public/)
  assert.doesNotMatch(v31.paths['/auth/user'].get.responses['401'].description, /Public/)
})

test("with an example user, the sign-in examples are the user's; sign-up keeps a new account's", async () => {
  const plain = await documents()
  assert.deepEqual(tokenExample(plain.v31), { email: 'user@example.com', password: 'correct-horse-battery-7' })
  const { v31, v30 } = await documents({ openapi: { exampleUser: DEV } })
  for (const doc of [v31, v30]) {
    assert.deepEqual(tokenExample(doc), DEV)
    assert.match(doc.info.description, /test user, dev@example\.com \/ authgate-dev-password/)
    assert.equal(
      doc.paths['/auth/signup'].post.requestBody.content['application/json'].examples.email.value.email,
      'user@example.com',
    )
  }
  const otp = v31.paths['/auth/otp'].post.requestBody.content['application/json'].examples.email.value
  assert.deepEqual(otp, { email: DEV.email })
})

test('an optional redirect_to keeps its example, not ticked for "try it"', async () => {
  const { v31, v30 } = await documents()
  for (const doc of [v31, v30]) {
    const redirect = doc.paths['/auth/token'].post.parameters.find((p: Json) => p.name === 'redirect_to')
    assert.equal(redirect.required, false)
    assert.equal(redirect.example, undefined)
    assert.equal(redirect.schema.example, undefined)
    assert.deepEqual(redirect.examples.default, {
      summary: 'A redirect the allow list holds',
      value: 'http://localhost:3000/welcome',
      'x-disabled': true,
    })
  }
})

test('the plugin registered after registerDocs is found when the document is first built', async () => {
  const app = Fastify()
  const registry = createRegistry(app)
  registerDocs(app, registry, { exampleUser: DEV })
  await app.register(authgate, { rateLimit: false, config: { backendUrl, prefix: '/identity' } })
  try {
    const doc = (await app.inject('/openapi.json')).json() as Json
    assert.match(doc.info.description, /`POST \/identity\/token`/)
    assert.deepEqual(
      doc.paths['/identity/token'].post.requestBody.content['application/json'].examples.password.value,
      DEV,
    )
  } finally {
    await app.close()
  }
})

test('AUTHGATE_DOCS_EXAMPLE_USER is email:password', () => {
  assert.deepEqual(loadOpenApiConfig({ AUTHGATE_DOCS_EXAMPLE_USER: 'dev@example.com:pass:word' }).exampleUser, {
    email: 'dev@example.com',
    password: 'pass:word',
  })
  assert.equal(loadOpenApiConfig({}).exampleUser, undefined)
  for (const bad of ['dev@example.com', ':secret', 'dev:secret', 'dev@example.com:'])
    assert.throws(
      () => loadOpenApiConfig({ AUTHGATE_DOCS_EXAMPLE_USER: bad }),
      /AUTHGATE_DOCS_EXAMPLE_USER: expected email:password/,
      bad,
    )
})

test('forTryIt leaves what it does not recognise alone', () => {
  const doc = {
    openapi: '3.1.0',
    info: { title: 'x', version: '1' },
    paths: {
      '/auth/x': null,
      '/auth/token': {
        parameters: [{ $ref: '#/components/parameters/p' }],
        post: {
          parameters: [
            'odd',
            { name: 'redirect_to', in: 'query', required: true, example: 'http://a' },
            { name: 'redirect_to', in: 'query', schema: { type: 'string' } },
            { name: 'redirect_to', in: 'query', schema: { type: 'string', example: 'http://b' } },
          ],
          requestBody: {
            content: {
              'application/json': { example: { email: 'user@example.com', password: 'p' }, examples: { a: 1 } },
              'text/plain': 'odd',
              'application/x-www-form-urlencoded': { examples: { b: { value: { email: 'other@example.com' } } } },
            },
          },
        },
      },
      '/elsewhere': {
        post: { requestBody: { content: { 'application/json': { example: { email: 'user@example.com' } } } } },
      },
    },
  } as unknown as OpenApiDocument
  const out = forTryIt(doc, { prefix: '/auth', exampleUser: DEV }) as unknown as Json
  const post = out.paths['/auth/token'].post
  assert.equal(post.parameters[1].example, 'http://a', 'a required redirect is sent as documented')
  assert.equal(post.parameters[2].examples, undefined, 'no example, nothing to untick')
  assert.equal(post.parameters[3].examples.default.value, 'http://b')
  assert.deepEqual(post.requestBody.content['application/json'].example, DEV)
  assert.deepEqual(post.requestBody.content['application/x-www-form-urlencoded'].examples.b.value, {
    email: 'other@example.com',
  })
  // Outside the prefix: the application's own examples are its own.
  assert.deepEqual(out.paths['/elsewhere'].post.requestBody.content['application/json'].example, {
    email: 'user@example.com',
  })
  const bare = forTryIt({ info: 'odd' } as unknown as OpenApiDocument, { prefix: undefined }) as unknown as Json
  assert.match(bare.info.description, /^## Introduction\n\n\*\*Which operations/)
})
