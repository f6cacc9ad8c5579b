import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AuthgateConfigError } from '../../src/core/config-error.ts'
import { createProtectionFromOptions } from '../../src/protect/index.ts'
import { normaliseAuth } from '../../src/protect/requirement.ts'
import { resolveResourceMetadata } from '../../src/protect/resource-metadata.ts'
import { createTokenVerifier } from '../../src/protect/verify.ts'

/** Protect's option errors are the one option error of authgate, naming the option as the user wrote it. */
const refuses = (option: string, make: () => unknown) =>
  assert.throws(make, (err: unknown) => err instanceof AuthgateConfigError && err.option === option)

const ISSUER = 'https://x.supabase.co/auth/v1'

test('every protect option error is an AuthgateConfigError naming its option', () => {
  refuses('protect.issuer', () => createTokenVerifier({ issuer: '' }))
  refuses('protect.secret', () => createTokenVerifier({ issuer: ISSUER, jwks: false }))
  refuses('protect.jwksUrl', () => createTokenVerifier({ issuer: ISSUER }))
  refuses('protect.tokenCache.maxEntries', () =>
    createTokenVerifier({ issuer: ISSUER, jwks: false, secret: 's', tokenCache: { maxEntries: 0 } }),
  )
  refuses('protect.sessionCheck', () =>
    createProtectionFromOptions({ issuer: ISSUER, jwks: false, secret: 's', sessionCheck: true }),
  )
  refuses('protect.resourceMetadata.resource', () =>
    resolveResourceMetadata(ISSUER, { resource: 'https://api.example.com/?x=1' }),
  )
  refuses('auth.mode', () => normaliseAuth({ mode: 'sometimes' as 'required' }))
  refuses('auth.aal', () => normaliseAuth({ aal: 'aal9' as 'aal1' }))
  const { protection } = createProtectionFromOptions({ issuer: ISSUER, jwks: false, secret: 's' })
  refuses('auth.session', () => protection.hook({ session: true }))
})

test('an option protect does not read is refused by name, with the one meant', () => {
  assert.throws(
    () => createProtectionFromOptions({ issuer: ISSUER, jwks: false, secret: 's', audiences: 'x' } as never),
    (err: unknown) =>
      err instanceof AuthgateConfigError &&
      err.option === 'protect.audiences' &&
      /did you mean protect\.audience\?/.test(err.message),
  )
})
