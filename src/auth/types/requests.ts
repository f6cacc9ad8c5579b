import { Type } from 'typebox'
import {
  PKCE_PAIR,
  bool,
  codeChallenge,
  codeChallengeMethod,
  emailInput as email,
  metaSecurity,
  obj,
  opt,
  str,
} from './common.ts'
import { present } from './presence.ts'

// Request bodies of the core auth routes, as Supabase Auth reads them. Unknown properties are
// allowed (JSON Schema's default): the backend ignores them and the gateway forwards them.
// Optional booleans carry no `default`: absent and `false` mean different things to the backend.

const phone = () => str('Phone number (E.164; a leading `+` and spaces are ignored)', '+15551234567')
const userData = () => obj('User metadata, stored as `user_metadata`', { name: 'Ada' })
const channel = () => str('Phone channel: `sms` (default) or `whatsapp`', 'sms')

const RESEND_TYPES = ['signup', 'email_change', 'sms', 'phone_change']

// The rules that pair fields count a field as given when it is a non-empty string (`present`):
// Supabase Auth reads `null` and `""` as absent there (src/auth/types/presence.ts).

/** `email` and `phone` exclude each other (Supabase Auth refuses both with 400 `validation_failed`). */
const EMAIL_OR_PHONE = { not: present('email', 'phone') }

const EMAIL_OR_PHONE_GIVEN = { anyOf: [present('email'), present('phone')] }

/** A password that comes with an e-mail or a phone: required, and at most 72 characters. */
const PASSWORD_WITH_ADDRESS = {
  if: EMAIL_OR_PHONE_GIVEN,
  then: {
    description: 'With an e-mail or a phone, a password is required, of at most 72 characters',
    required: ['password'],
    properties: { password: { type: 'string', maxLength: 72 } },
  },
}

export const SignupRequest = Type.Object(
  {
    password: opt(
      str(
        'Password: at least 6 characters (Supabase Auth may require more); required with `email` or `phone`, then at most 72 characters. An anonymous sign-in needs none.',
        'correct-horse-battery',
        { minLength: 6 },
      ),
    ),
    email: opt(email('E-mail address; exclusive with `phone`')),
    phone: opt(phone()),
    data: opt(userData()),
    channel: opt(channel()),
    code_challenge: codeChallenge(),
    code_challenge_method: codeChallengeMethod(),
    gotrue_meta_security: metaSecurity(),
  },
  {
    title: 'SignupRequest',
    description:
      'Sign up with an e-mail or a phone and a password. A body naming neither `email` nor `phone` is an anonymous sign-in (what supabase-js `signInAnonymously()` sends) and needs no password.',
    // Naming an e-mail or a phone makes the password required and subject to the length rules;
    // an anonymous sign-in ignores it.
    allOf: [PASSWORD_WITH_ADDRESS],
    dependentSchemas: PKCE_PAIR,
    ...EMAIL_OR_PHONE,
  },
)

export const TokenRequest = Type.Object(
  {
    // The specification's rule: an e-mail, when given, is an e-mail (Supabase Auth only looks it
    // up; docs/decisions.md, D26).
    email: opt(str('E-mail (grant `password`)', 'user@example.com', { format: 'email' })),
    phone: opt(phone()),
    password: opt(str('Password (grant `password`)', 'correct-horse-battery')),
    refresh_token: opt(str('Refresh token (grant `refresh_token`)', 'x3k9v2m7q1pz')),
    auth_code: opt(
      str(
        'Authorization code from an e-mail link or OAuth redirect (grant `pkce`)',
        '2f6d1c3b-5e71-4b7a-9a0e-8f2c9a523c1e',
      ),
    ),
    code_verifier: opt(str('PKCE code verifier (grant `pkce`)', 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')),
    id_token: opt(
      str('OIDC ID token from the provider (grant `id_token`)', 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln'),
    ),
    access_token: opt(str('Provider access token, checked against `at_hash` (grant `id_token`)', 'ya29.a0AfH6SMBx')),
    nonce: opt(str('Nonce the ID token must carry (grant `id_token`)', 'n-0S6_WzA2Mj')),
    provider: opt(str('Provider of the ID token, e.g. `google`, `apple` (grant `id_token`)', 'google')),
    client_id: opt(str('Deprecated alternative to `provider` (grant `id_token`)', 'my-app.apps.googleusercontent.com')),
    issuer: opt(str('Deprecated alternative to `provider` (grant `id_token`)', 'https://accounts.google.com')),
    link_identity: opt(
      bool('Link the identity to the signed-in user (grant `id_token`; needs the user bearer token)', false),
    ),
    gotrue_meta_security: metaSecurity(),
  },
  { title: 'TokenRequest', description: 'Credentials for the grant named by the `grant_type` query parameter' },
)

export const OTPRequest = Type.Object(
  {
    email: opt(email('E-mail to send a magic link or code to; exclusive with `phone`')),
    phone: opt(phone()),
    create_user: opt(bool('Create the user if unknown (the backend treats absent as true)', true)),
    data: opt(userData()),
    channel: opt(channel()),
    code_challenge: codeChallenge(),
    code_challenge_method: codeChallengeMethod(),
    gotrue_meta_security: metaSecurity(),
  },
  {
    title: 'OTPRequest',
    description: 'Send a one-time code or magic link to an e-mail address or a phone (one of them)',
    dependentSchemas: PKCE_PAIR,
    // One of them is needed (Supabase Auth: "One of email or phone must be set").
    ...EMAIL_OR_PHONE_GIVEN,
    ...EMAIL_OR_PHONE,
  },
)

export const MagicLinkRequest = Type.Object(
  {
    email: email('E-mail to send the magic link to'),
    data: opt(userData()),
    code_challenge: codeChallenge(),
    code_challenge_method: codeChallengeMethod(),
    gotrue_meta_security: metaSecurity(),
  },
  {
    title: 'MagicLinkRequest',
    description: 'Send a magic link by e-mail (the older form of `POST /otp` with an e-mail)',
    dependentSchemas: PKCE_PAIR,
  },
)

export const VerifyRequest = Type.Object(
  {
    type: str('Kind of code', 'email', {
      enum: ['signup', 'invite', 'magiclink', 'recovery', 'email_change', 'email', 'sms', 'phone_change'],
    }),
    token: opt(str('The 6–10 digit one-time code (needs `email` or `phone`)', '123456')),
    token_hash: opt(
      str('Hashed token from an e-mail link (alternative to `token`)', 'pkce_5d41402abc4b2a76b9719d911017c592'),
    ),
    email: opt(email('E-mail the code was sent to')),
    phone: opt(phone()),
    redirect_to: opt(str('Ignored with `token`, rejected with `token_hash`', 'http://localhost:3000/welcome')),
    gotrue_meta_security: metaSecurity(),
  },
  {
    title: 'VerifyRequest',
    description:
      'Verify a one-time code (`token` with `email` or `phone`, one of them) or an e-mail link token (`token_hash` alone with `type`)',
    // In Supabase Auth's order of checks: the type, then a token or a token hash (not both), then
    // the address that goes with a token; a token hash comes alone.
    allOf: [
      { required: ['type'] },
      { anyOf: [present('token'), present('token_hash')] },
      { not: present('token', 'token_hash') },
      EMAIL_OR_PHONE,
      { if: present('token'), then: EMAIL_OR_PHONE_GIVEN },
      {
        if: present('token_hash'),
        then: { not: { anyOf: [present('email'), present('phone'), present('redirect_to')] } },
      },
    ],
  },
)

export const RecoverRequest = Type.Object(
  {
    email: email('E-mail of the account to recover'),
    code_challenge: codeChallenge(),
    code_challenge_method: codeChallengeMethod(),
    gotrue_meta_security: metaSecurity(),
  },
  { title: 'RecoverRequest', description: 'Send a password recovery e-mail', dependentSchemas: PKCE_PAIR },
)

export const ResendRequest = Type.Object(
  {
    type: str('What to resend', 'signup', { enum: RESEND_TYPES }),
    email: opt(email('E-mail (e-mail types)')),
    phone: opt(phone()),
    code_challenge: codeChallenge(),
    code_challenge_method: codeChallengeMethod(),
    gotrue_meta_security: metaSecurity(),
  },
  {
    title: 'ResendRequest',
    description: 'Resend a confirmation or change message to an e-mail address or a phone (one of them)',
    dependentSchemas: PKCE_PAIR,
    // Supabase Auth checks the type before the address.
    allOf: [
      { properties: { type: { description: 'What to resend', enum: RESEND_TYPES, examples: ['signup'] } } },
      // An SMS goes to a phone (Supabase Auth: "Type provided requires a phone number").
      { if: { required: ['type'], properties: { type: { const: 'sms' } } }, then: present('phone') },
      EMAIL_OR_PHONE,
    ],
  },
)

const nullableString = (description: string, example: string) =>
  opt(Type.Union([Type.String(), Type.Null()], { description, examples: [example] }))

export const UpdateUserRequest = Type.Object(
  {
    email: opt(email('New e-mail address')),
    phone: opt(phone()),
    channel: opt(channel()),
    password: nullableString('New password (`null` or absent: unchanged)', 'new-correct-horse'),
    current_password: nullableString('Current password, when the backend requires it', 'correct-horse-battery'),
    nonce: opt(str('Reauthentication code, when the backend requires it', '123456')),
    data: opt(obj('Merged into `user_metadata`; a key set to `null` is removed', { name: 'Ada Lovelace' })),
    code_challenge: codeChallenge(),
    code_challenge_method: codeChallengeMethod(),
  },
  {
    title: 'UpdateUserRequest',
    description:
      'Attributes of the signed-in user to change. `app_metadata` is not for users: Supabase Auth answers 403 `not_admin` to any use of it.',
    dependentSchemas: PKCE_PAIR,
  },
)

export const ReauthenticateRequest = Type.Object(
  {},
  {
    title: 'ReauthenticateRequest',
    description: 'No fields: sends a reauthentication code to the user',
    examples: [{}],
  },
)
