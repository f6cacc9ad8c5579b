import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AUTH_ROUTES as OLD, DEFAULT_RATE_LIMITED as OLD_LIMITED } from '../../src/auth/routes.ts'
import { AUTH_ROUTES as NEW, DEFAULT_RATE_LIMITED as NEW_LIMITED } from '../../src/auth/routes/index.ts'

// Temporary: the table split by group must hold the same routes, field for field, in the same order,
// as the single file it replaces (removed with that file).

/** Every field, schemas as plain JSON (symbol keys included), undefined kept, functions by source. */
function plain(v: unknown): unknown {
  if (v === undefined) return { $undefined: true }
  if (typeof v === 'function') return { $function: v.toString() }
  if (Array.isArray(v)) return v.map(plain)
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {}
    for (const k of Object.keys(v).sort()) out[k] = plain((v as Record<string, unknown>)[k])
    for (const s of Object.getOwnPropertySymbols(v)) out[String(s)] = plain((v as Record<symbol, unknown>)[s])
    return out
  }
  return v
}

// The only change: two MFA codes were misspelt (Supabase Auth sends `mfa_webauthn_...`); the
// checked error-code list caught them.
const FIXED: Record<string, string> = {
  mfa_web_authn_enroll_not_enabled: 'mfa_webauthn_enroll_not_enabled',
  mfa_web_authn_verify_not_enabled: 'mfa_webauthn_verify_not_enabled',
}

test('the routes split by group are the old table, field for field and in order', () => {
  assert.equal(NEW.length, 44)
  assert.equal(NEW.length, OLD.length)
  for (const [i, old] of OLD.entries()) {
    const expected = plain({
      ...old,
      errors: Object.fromEntries(Object.entries(old.errors).map(([s, codes]) => [s, codes!.map((c) => FIXED[c] ?? c)])),
    })
    assert.deepEqual(plain(NEW[i]), expected, `${old.method} ${old.path}`)
  }
  assert.deepEqual(NEW_LIMITED, OLD_LIMITED)
})
