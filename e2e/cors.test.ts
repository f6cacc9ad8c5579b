import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { chromiumUnavailableReason, launchChromium } from './support/chromium.ts'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = (await backendUnavailableReason()) ?? (await chromiumUnavailableReason())

/** A static site on its own origin: a page and supabase-js's browser bundle. */
async function startSite(): Promise<{ server: Server; origin: string }> {
  const bundle = await readFile(new URL('../node_modules/@supabase/supabase-js/dist/umd/supabase.js', import.meta.url))
  const server = createServer((req, res) => {
    if (req.url === '/supabase.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle)
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end('<!doctype html><title>app</title><script src="/supabase.js"></script>')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  return { server, origin: `http://localhost:${port}` }
}

/**
 * A browser app on another origin signs up and in with supabase-js through authgate: the preflights
 * (supabase-js sends `apikey`, `x-client-info`, `x-supabase-api-version`) are answered by authgate.
 */
describe('supabase-js in Chromium on another origin', { skip: unavailable }, () => {
  let stack: Stack
  let browser: Browser
  let allowed: { server: Server; origin: string }
  let other: { server: Server; origin: string }

  before(async () => {
    allowed = await startSite()
    other = await startSite()
    // supabase-js's createClient talks to <url>/auth/v1.
    stack = await startStack({ database: 'authgate_e2e_cors', prefix: '/auth/v1', corsOrigins: [allowed.origin] })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await stack?.stop()
    allowed?.server.close()
    other?.server.close()
  })

  async function signUpAndIn(origin: string) {
    const page = await browser.newPage()
    try {
      await page.goto(origin + '/')
      return await page.evaluate(async (url) => {
        const sb = (globalThis as any).supabase.createClient(url, 'anon-key-for-self-hosted', {
          auth: { persistSession: false },
        })
        const email = `cors-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`
        const up = await sb.auth.signUp({ email, password: 'correct-horse-9' })
        const inn = await sb.auth.signInWithPassword({ email, password: 'correct-horse-9' })
        return {
          signUpError: up.error ? String(up.error.message) : null,
          signInError: inn.error ? String(inn.error.message) : null,
          email: inn.data?.user?.email ?? null,
          hasToken: typeof inn.data?.session?.access_token === 'string',
        }
      }, stack.url)
    } finally {
      await page.close()
    }
  }

  it('signs up and in from an allowed origin', async () => {
    const result = await signUpAndIn(allowed.origin)
    assert.equal(result.signUpError, null)
    assert.equal(result.signInError, null)
    assert.equal(result.hasToken, true)
    assert.match(String(result.email), /^cors-/)
  })

  it('is refused by the browser from an origin not on the list', async () => {
    const result = await signUpAndIn(other.origin)
    assert.notEqual(result.signInError, null)
    assert.equal(result.hasToken, false)
  })
})
