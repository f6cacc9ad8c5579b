import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.ts'
import { AUTH_TAG_DESCRIPTIONS } from '../../src/auth/tags.ts'

test('every tag of the served document has a description, the auth route table’s from the table', async () => {
  const app = await buildApp({ rateLimit: false, config: { backendUrl: new URL('http://127.0.0.1:9') } })
  try {
    await app.ready()
    const doc = (await app.inject('/openapi.json')).json() as { tags: Array<{ name: string; description?: string }> }
    assert.deepEqual(doc.tags.map((t) => t.name).sort(), ['Auth', 'MFA', 'OAuth', 'Passkey', 'SSO'])
    for (const t of doc.tags)
      assert.equal(t.description, AUTH_TAG_DESCRIPTIONS[t.name as keyof typeof AUTH_TAG_DESCRIPTIONS], t.name)
  } finally {
    await app.close()
  }
})

test('tag descriptions given as options win over the table’s', async () => {
  const app = await buildApp({
    rateLimit: false,
    config: { backendUrl: new URL('http://127.0.0.1:9') },
    openapi: { tags: [{ name: 'MFA', description: 'Second factors' }] },
  })
  try {
    await app.ready()
    const doc = (await app.inject('/openapi.json')).json() as { tags: Array<{ name: string; description?: string }> }
    assert.equal(doc.tags.find((t) => t.name === 'MFA')?.description, 'Second factors')
  } finally {
    await app.close()
  }
})
