import { Type } from 'typebox'
import { int, obj, opt, pathSegment, str, uuid } from './common.ts'

// Multi-factor authentication (supabase-js `auth.mfa.*`). Bodies are what Supabase Auth reads;
// unknown properties pass (supabase-js sends `factorId` in the challenge body, for one).

const webauthnParams = () =>
  opt(
    obj('WebAuthn factors: `{type: "create" | "request", credential_response}` from navigator.credentials', {
      type: 'request',
      credential_response: { id: 'AbCd', rawId: 'AbCd', type: 'public-key' },
    }),
  )

export const EnrollFactorRequest = Type.Object(
  {
    factor_type: str('`totp`, `phone` or `webauthn` (each must be enabled on Supabase Auth)', 'totp', {
      enum: ['totp', 'phone', 'webauthn'],
    }),
    friendly_name: opt(str('Name to tell factors apart', 'My phone')),
    issuer: opt(str('TOTP issuer shown by authenticator apps (default: the site URL host)', 'example.com')),
    phone: opt(str('Phone number of a phone factor (E.164)', '+15551234567')),
  },
  { title: 'EnrollFactorRequest', description: 'Enrol a new, unverified factor' },
)

export const EnrollFactorResponse = Type.Object(
  {
    id: uuid('Factor id'),
    type: str('`totp`, `phone` or `webauthn`', 'totp'),
    friendly_name: str('Name of the factor (`""` when none was given)', 'My phone'),
    totp: opt(
      Type.Object(
        {
          qr_code: str('SVG QR code of the `otpauth://` URI', '<svg xmlns="http://www.w3.org/2000/svg"></svg>'),
          secret: str('Base32 TOTP secret', 'JBSWY3DPEHPK3PXP'),
          uri: str(
            '`otpauth://` URI for authenticator apps',
            'otpauth://totp/example.com:ada@example.com?issuer=example.com&secret=JBSWY3DPEHPK3PXP',
          ),
        },
        { description: 'TOTP factors: what the authenticator app needs' },
      ),
    ),
    phone: opt(str('Phone factors: the number', '15551234567')),
  },
  { title: 'EnrollFactorResponse', description: 'The new factor, unverified until its first challenge is verified' },
)

export const ChallengeFactorRequest = Type.Object(
  {
    channel: opt(str('Phone factors: `sms` (default) or `whatsapp`', 'sms')),
    webauthn: webauthnParams(),
  },
  {
    title: 'ChallengeFactorRequest',
    description:
      'Empty for TOTP factors (Supabase Auth does not read the body then); channel or WebAuthn data otherwise',
    examples: [{}],
  },
)

export const ChallengeFactorResponse = Type.Object(
  {
    id: uuid('Challenge id, to give to verify'),
    type: str('Factor type', 'totp'),
    expires_at: opt(int('Challenge expiry, Unix seconds', 1795000300)),
    webauthn: opt(obj('WebAuthn factors: `{type, credential_options}`', { type: 'request', credential_options: {} })),
  },
  { title: 'ChallengeFactorResponse', description: 'A challenge to answer at verify' },
)

export const VerifyFactorRequest = Type.Object(
  {
    challenge_id: uuid('Id of the challenge'),
    code: opt(str('The code from the authenticator app or SMS (not for WebAuthn)', '123456')),
    webauthn: webauthnParams(),
  },
  { title: 'VerifyFactorRequest', description: 'Answer a challenge; on success the session is raised to `aal2`' },
)

export const UnenrollFactorResponse = Type.Object(
  { id: uuid('Id of the removed factor') },
  { title: 'UnenrollFactorResponse', description: 'The removed factor' },
)

export const FactorIdParams = Type.Object({
  factor_id: pathSegment('Factor id', '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71', { format: 'uuid' }),
})
