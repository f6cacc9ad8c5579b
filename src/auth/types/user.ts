import { Type } from 'typebox'
import { bool, email, int, obj, opt, str, strArray, timestamp, uuid } from './common.ts'

// Shapes as Supabase Auth serialises them. Responses are documented,
// never validated, so optional fields are the ones the server omits when empty.

export const Identity = Type.Object(
  {
    identity_id: uuid('Row id of the identity'),
    id: str(
      'Subject of the user at the provider (the user id for `email` and `phone`)',
      '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71',
    ),
    user_id: uuid('Owning user'),
    identity_data: opt(
      obj('Claims from the provider', { email: 'user@example.com', sub: '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71' }),
    ),
    provider: str('Provider name', 'email'),
    last_sign_in_at: opt(timestamp('Last sign-in with this identity')),
    created_at: timestamp('Creation time'),
    updated_at: timestamp('Last update'),
    email: opt(email('E-mail from the provider')),
  },
  { title: 'Identity', description: 'A linked sign-in identity' },
)

export const Factor = Type.Object(
  {
    id: uuid('Factor id'),
    created_at: timestamp('Creation time'),
    updated_at: timestamp('Last update'),
    status: str('`verified` or `unverified`', 'verified'),
    friendly_name: opt(str('Name given by the user', 'My phone')),
    factor_type: str('`totp`, `phone` or `webauthn`', 'totp'),
    phone: opt(str('Phone number of a phone factor', '')),
    last_challenged_at: opt(
      Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: 'Last challenge',
        examples: [null],
      }),
    ),
  },
  { title: 'Factor', description: 'An MFA factor' },
)

export const UserObject = Type.Object(
  {
    id: uuid('User id'),
    aud: str('Audience', 'authenticated'),
    role: str('Postgres role used for the user', 'authenticated'),
    email: str('E-mail address (`""` when none)', 'user@example.com'),
    email_confirmed_at: opt(timestamp('E-mail confirmation time')),
    invited_at: opt(timestamp('Invitation time')),
    phone: str('Phone number in E.164 digits without `+` (`""` when none)', '15551234567'),
    phone_confirmed_at: opt(timestamp('Phone confirmation time')),
    confirmation_sent_at: opt(timestamp('When the confirmation message was sent')),
    confirmed_at: opt(timestamp('Earliest of the e-mail and phone confirmations')),
    recovery_sent_at: opt(timestamp('When the recovery message was sent')),
    new_email: opt(email('Pending new e-mail address')),
    email_change_sent_at: opt(timestamp('When the e-mail change message was sent')),
    new_phone: opt(str('Pending new phone number', '15557654321')),
    phone_change_sent_at: opt(timestamp('When the phone change message was sent')),
    reauthentication_sent_at: opt(timestamp('When the reauthentication code was sent')),
    last_sign_in_at: opt(timestamp('Last sign-in')),
    app_metadata: obj('Metadata set by the server (provider, providers)', { provider: 'email', providers: ['email'] }),
    user_metadata: obj('Metadata the user may change (`data` of sign-up and PUT /user)', { name: 'Ada' }),
    identities: Type.Union([Type.Array(Identity), Type.Null()], { description: 'Linked identities', examples: [[]] }),
    factors: opt(Type.Array(Factor, { description: 'MFA factors (omitted when none)', examples: [[]] })),
    created_at: timestamp('Creation time'),
    updated_at: timestamp('Last update'),
    banned_until: opt(timestamp('Ban end')),
    deleted_at: opt(timestamp('Soft-deletion time')),
    is_anonymous: bool('Whether the user signed in anonymously', false),
  },
  { title: 'UserObject', description: 'A Supabase Auth user' },
)

export const WeakPassword = Type.Object(
  {
    message: opt(
      str('Why the password is weak', 'Password should contain at least one character of each: abc, ABC, 123'),
    ),
    reasons: strArray('`length`, `characters` or `pwned`', ['characters']),
  },
  { title: 'WeakPassword', description: 'Present when the password no longer satisfies the password rules' },
)

export const SessionResponse = Type.Object(
  {
    access_token: str(
      'JWT access token',
      'eyJhbGciOiJFUzI1NiIsImtpZCI6ImtleS0xIiwidHlwIjoiSldUIn0.eyJzdWIiOiIxIn0.c2lnbmF0dXJl',
    ),
    token_type: str('Always `bearer`', 'bearer'),
    expires_in: int('Lifetime of the access token in seconds', 3600),
    expires_at: int('Expiry of the access token, Unix seconds', 1795000000),
    refresh_token: str('Opaque refresh token', 'x3k9v2m7q1pz'),
    user: UserObject,
    provider_token: opt(
      str('Access token of the external provider (OAuth sign-ins)', 'gho_16C7e42F292c6912E7710c838347Ae178B4a'),
    ),
    provider_refresh_token: opt(
      str('Refresh token of the external provider', 'ghr_1B4a2e77838347a7E420ce178F2E7c6912E169246c'),
    ),
    // `null` when the password passes the rules (password grant), absent on other grants.
    weak_password: opt(
      // An inline copy, not the named component: a nullable reference has no faithful 3.0 rendering.
      Type.Union([Type.Object(WeakPassword.properties), Type.Null()], {
        description: 'Present when the password no longer satisfies the password rules (`null` when it does)',
        examples: [null],
      }),
    ),
  },
  {
    title: 'SessionResponse',
    description:
      'A session: tokens and the user. `/signup` without auto-confirmation returns a bare UserObject instead.',
  },
)

/** `/signup` answers a session, or a bare user when confirmation is pending. */
export const SignupResponse = Type.Union([SessionResponse, UserObject], {
  title: 'SignupResponse',
  description: 'A session when the user is (auto)confirmed, otherwise the user awaiting confirmation',
})

export const MessageResponse = Type.Object(
  {
    message_id: opt(str('Id of the SMS sent (`test-otp` for a configured test code)', 'SM2b6c0e4a')),
  },
  { title: 'MessageResponse', description: '`{}`, or `{message_id}` after an SMS was sent', examples: [{}] },
)

export const VerifyMessageResponse = Type.Object(
  {
    msg: str(
      'Outcome of the first half of a secure e-mail change',
      'Confirmation link accepted. Please proceed to confirm link sent to the other email',
    ),
    code: str('Always the string "200"', '200'),
  },
  {
    title: 'VerifyMessageResponse',
    description: 'Answer of POST /verify for the first half of a secure e-mail change',
  },
)
