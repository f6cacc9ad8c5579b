import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AuthgateConfigError } from '../../src/config.ts'
import { resolveOpenApiConfig } from '../../src/docs-server/config.ts'
import { resolveServicesConfig } from '../../src/services/config.ts'
import { resolveSessionConfig, type SessionOptions } from '../../src/sessions/config.ts'

// Options given in code are checked as their variables are, and an unknown one is refused by name.
const KEY = `k1:${Buffer.alloc(32, 7).toString('base64')}`

const refused = (run: () => unknown, option: string, message: RegExp) =>
  assert.throws(
    run,
    (err: Error) => err instanceof AuthgateConfigError && err.option === option && message.test(err.message),
  )

test('sessions: an unknown option, with the one meant', () => {
  refused(
    () => resolveSessionConfig({ keys: [KEY], lifetime: 60_000 } as unknown as SessionOptions),
    'sessions.lifetime',
    /did you mean sessions\.lifetimeMs\?/,
  )
})

test('sessions: a value of the wrong type is refused by its variable’s rules, named as the option', () => {
  const bad = (options: object) => () => resolveSessionConfig({ keys: [KEY], ...options } as SessionOptions)
  refused(bad({ lifetimeMs: '1h' }), 'sessions.lifetimeMs', /milliseconds/)
  refused(bad({ secure: 'yes' }), 'sessions.secure', /true or false/)
  refused(bad({ allowedOrigins: ['not an origin'] }), 'sessions.allowedOrigins', /not an origin/)
  refused(bad({ mode: 'always' }), 'sessions.mode', /"on" or "request"/)
  assert.equal(resolveSessionConfig({ keys: [KEY], lifetimeMs: 3_600_000 }).lifetimeMs, 3_600_000)
})

test('services: an unknown option, with the one meant', () => {
  refused(
    () => resolveServicesConfig({ supabaseURL: 'https://x.supabase.co' } as never),
    'services.supabaseURL',
    /did you mean services\.supabaseUrl\?/,
  )
})

test('documentation: an unknown option, with the one meant', () => {
  refused(
    () => resolveOpenApiConfig({ docPath: '/ref' } as never),
    'openapi.docPath',
    /did you mean openapi\.docsPath\?/,
  )
})
