import { Type, type TSchema } from 'typebox'
import { present } from './presence.ts'

/**
 * Property builders that force a description and an example on every property, so the OpenAPI
 * document never shows a bare field. Constraints are only those Supabase Auth really enforces:
 * a stricter gateway would reject requests the backend accepts.
 */
export const str = (description: string, example: string, extra: Record<string, unknown> = {}) =>
  Type.String({ description, examples: [example], ...extra })
export const int = (description: string, example: number, extra: Record<string, unknown> = {}) =>
  Type.Integer({ description, examples: [example], ...extra })
export const bool = (description: string, example: boolean) => Type.Boolean({ description, examples: [example] })
export const obj = (description: string, example: Record<string, unknown>) =>
  Type.Record(Type.String(), Type.Unknown(), { description, examples: [example] })
export const strArray = (description: string, example: string[], extra: Record<string, unknown> = {}) =>
  Type.Array(Type.String(), { description, examples: [example], ...extra })
export const opt = <T extends TSchema>(schema: T) => Type.Optional(schema)

export const timestamp = (description: string) => str(description, '2026-11-22T10:00:00Z', { format: 'date-time' })
export const uuid = (description: string, example = '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71') =>
  str(description, example, { format: 'uuid' })
export const email = (description = 'E-mail address') => str(description, 'user@example.com', { format: 'email' })
/** An e-mail Supabase Auth validates on this route: its format rule and its 255-character limit. */
export const emailInput = (description = 'E-mail address') =>
  str(description, 'user@example.com', { format: 'email', maxLength: 255 })

/** The captcha object, under the name Supabase Auth reads (docs/decisions.md, D2). */
export const MetaSecurity = Type.Object(
  {
    captcha_token: opt(
      str(
        'Captcha token (hCaptcha or Turnstile) when captcha protection is on',
        '10000000-aaaa-bbbb-cccc-000000000001',
      ),
    ),
  },
  {
    title: 'MetaSecurity',
    description: 'Captcha data, read by Supabase Auth when `GOTRUE_SECURITY_CAPTCHA_ENABLED` is on',
    examples: [{ captcha_token: '10000000-aaaa-bbbb-cccc-000000000001' }],
  },
)
export const metaSecurity = () => opt(MetaSecurity)

/**
 * PKCE values as Supabase Auth checks them (RFC 7636 §4.1: 43–128 unreserved characters).
 * supabase-js sends `null` for both in implicit mode, so null must validate.
 */
export const codeChallenge = () =>
  opt(
    Type.Union([Type.String({ minLength: 43, maxLength: 128, pattern: '^[A-Za-z0-9._~-]+$' }), Type.Null()], {
      description: 'PKCE code challenge (43–128 characters of [A-Za-z0-9._~-]); `null` when not in PKCE mode',
      examples: ['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'],
    }),
  )
export const codeChallengeMethod = () =>
  opt(
    Type.Union([Type.String({ pattern: '^(?:[Ss]256|[Pp][Ll][Aa][Ii][Nn])$' }), Type.Null()], {
      description: 'PKCE method, `s256` or `plain` (case-insensitive); `null` when not in PKCE mode',
      examples: ['s256'],
    }),
  )

/**
 * The rule of the path guard (src/proxy/path-guard.ts) on a parameter's decoded value, as a pattern:
 * not empty, not `.` or `..`, no `/`, `\\` or control characters. Anything else is re-encoded and
 * reaches Supabase Auth as exactly one path segment.
 */
export const PATH_SEGMENT_PATTERN = '^(?!\\.\\.?$)[^/\\\\\\u0000-\\u001F\\u007F-\\u009F]+$'

/** A `{param}` of a mounted route, with the guard's rule visible. */
export const pathSegment = (description: string, example: string, extra: Record<string, unknown> = {}) =>
  str(
    `${description}. One path segment: not empty, not \`.\` or \`..\`, no \`/\`, \`\\\` or control characters (else 400 \`validation_failed\` from authgate)`,
    example,
    { pattern: PATH_SEGMENT_PATTERN, ...extra },
  )

/**
 * Keys the JSON reader refuses at any depth (400 `bad_json`): `__proto__`, and a `constructor`
 * holding a `prototype`. Shown on every request body.
 */
export const NO_PROTOTYPE_KEYS = {
  description:
    'authgate refuses a `__proto__` key at any depth, and a `constructor` key holding a `prototype` (400 `bad_json`)',
  not: { const: '__proto__' },
} as const

/**
 * A PKCE challenge needs its method: Supabase Auth refuses the pair half given, or fails on it
 * (`PUT /user`). Applies when `code_challenge` is given, a non-empty string (supabase-js sends
 * `null` for both outside PKCE mode, and Supabase Auth reads `""` as absent).
 */
export const PKCE_PAIR = {
  code_challenge: { if: present('code_challenge'), then: present('code_challenge_method') },
} as const
