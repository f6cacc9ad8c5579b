import assert from 'node:assert/strict'
import { createServer, type IncomingMessage } from 'node:http'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { SupabaseClient } from '@supabase/supabase-js'
import { startStack, type Stack } from './support/stack.ts'
import { backendUnavailableReason } from './support/supabase-auth.ts'

const unavailable = await backendUnavailableReason()
const needsBackend = { skip: unavailable }
const ROOT = fileURLToPath(new URL('../', import.meta.url))

/** The README's hosted example, exactly as written between its markers. */
async function readmeExample(): Promise<string> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8')
  const block = /<!-- hosted-example:start[^>]*-->\s*```ts\n([\s\S]*?)```\s*<!-- hosted-example:end -->/.exec(readme)
  if (!block) throw new Error('README.md: the hosted example markers are missing')
  // The block is indented under its list item.
  return block[1]!.replace(/^ {3}/gm, '')
}

/** Stands in for https://<ref>.supabase.co: the project's other services, recording who called. */
async function startProject() {
  const requests: Array<{
    method: string
    path: string
    authorization: string | undefined
    apikey: string | undefined
  }> = []
  const server = createServer((req: IncomingMessage, res) => {
    requests.push({
      method: req.method ?? '',
      path: (req.url ?? '').split('?')[0]!,
      authorization: req.headers.authorization,
      apikey: req.headers.apikey as string | undefined,
    })
    req.resume()
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('[]'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

describe("README's hosted example, run as written (the real Supabase Auth standing in for the hosted one)", () => {
  let stack: Stack
  let project: Awaited<ReturnType<typeof startProject>>
  let dir: string
  let supabase: SupabaseClient

  before(async () => {
    if (unavailable !== undefined) return
    project = await startProject()
    // AUTHGATE_PREFIX=/auth/v1 and AUTHGATE_SUPABASE_URL as in the README's step 2; the project's
    // Auth is the real Supabase Auth (its URL given explicitly, as AUTHGATE_BACKEND_URL overrides
    // the one derived from the project URL).
    stack = await startStack({
      database: 'authgate_e2e_readme_hosted',
      prefix: '/auth/v1',
      services: () => ({ supabaseUrl: project.url }),
    })
    const source = (await readmeExample())
      .replaceAll('https://api.example.com', stack.url)
      .replaceAll('https://abcdefgh.supabase.co', project.url)
    // Inside the repository, so that '@supabase/supabase-js' resolves as it would in an application.
    dir = await mkdtemp(join(ROOT, '.readme-example-'))
    await writeFile(join(dir, 'client.mjs'), source)
    ;({ supabase } = (await import(join(dir, 'client.mjs'))) as { supabase: SupabaseClient })
  })

  after(async () => {
    await supabase?.auth.stopAutoRefresh()
    await supabase?.removeAllChannels()
    if (dir) await rm(dir, { recursive: true, force: true })
    await project?.close()
    await stack?.stop()
  })

  it(
    'one client: auth, data, storage and functions all go to authgate, which sends them on with the session token',
    needsBackend,
    async () => {
      const email = 'readme-hosted@example.com'
      const password = 'correct-horse-battery-7'
      const signUp = await supabase.auth.signUp({ email, password })
      assert.equal(signUp.error, null)
      await supabase.auth.signOut()
      const signIn = await supabase.auth.signInWithPassword({ email, password })
      assert.equal(signIn.error, null)
      const token = signIn.data.session!.access_token

      const todos = await supabase.from('todos').select()
      assert.equal(todos.error, null)
      assert.deepEqual(todos.data, [])
      await supabase.storage.from('avatars').list()
      await supabase.functions.invoke('hello', { body: { a: 1 } })

      const paths = project.requests.map((r) => `${r.method} ${r.path}`)
      assert.ok(paths.includes('GET /rest/v1/todos'), paths.join(', '))
      assert.ok(paths.includes('POST /storage/v1/object/list/avatars'), paths.join(', '))
      assert.ok(paths.includes('POST /functions/v1/hello'), paths.join(', '))
      for (const r of project.requests) {
        assert.equal(r.authorization, `Bearer ${token}`, `${r.method} ${r.path} carries the user's token`)
        assert.equal(r.apikey, 'sb_publishable_...')
      }
      assert.ok(!project.requests.some((r) => r.path.startsWith('/auth/')), 'no auth call went to the project')
      // Every call went to authgate: the client was given no other URL.
      const targets = stack.observed.map((o) => `${o.method} ${o.target.split('?')[0]}`)
      for (const call of [
        'POST /auth/v1/signup',
        'POST /auth/v1/token',
        'GET /rest/v1/todos',
        'POST /storage/v1/object/list/avatars',
        'POST /functions/v1/hello',
      ])
        assert.ok(targets.includes(call), `${call} in ${targets.join(', ')}`)
    },
  )
})
