import { Type } from 'typebox'
import { int, metaSecurity, obj, opt, pathSegment, str, timestamp, uuid } from './common.ts'

// Passkeys (WebAuthn) of Supabase Auth: options, verification, list, rename, delete.

const credential = (description: string) =>
  obj(description, {
    id: 'AbCd',
    rawId: 'AbCd',
    type: 'public-key',
    response: { clientDataJSON: 'eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0' },
  })

const challengeId = () => uuid('Id of the challenge returned by the options call')

const OptionsResponse = (title: string, description: string, example: Record<string, unknown>) =>
  Type.Object(
    {
      challenge_id: challengeId(),
      options: obj('WebAuthn options for navigator.credentials (binary fields base64url)', example),
      expires_at: int('Challenge expiry, Unix seconds', 1795000300),
    },
    { title, description },
  )

export const PasskeyRegistrationOptionsRequest = Type.Object(
  {},
  {
    title: 'PasskeyRegistrationOptionsRequest',
    description: 'No fields (the body is ignored; supabase-js sends `{}`)',
    examples: [{}],
  },
)
export const PasskeyRegistrationOptionsResponse = OptionsResponse(
  'PasskeyRegistrationOptionsResponse',
  'Creation options for a new passkey',
  { rp: { name: 'My App', id: 'example.com' }, challenge: 'Y2hhbGxlbmdl', timeout: 300000, attestation: 'none' },
)
export const PasskeyRegistrationVerifyRequest = Type.Object(
  {
    challenge_id: challengeId(),
    credential: credential('The PublicKeyCredential from navigator.credentials.create, JSON-serialised'),
  },
  { title: 'PasskeyRegistrationVerifyRequest', description: 'Completes a passkey registration' },
)
export const PasskeyRegistrationVerifyResponse = Type.Object(
  {
    id: uuid('Passkey id'),
    friendly_name: opt(str('Name (from the authenticator model, or set by the user)', 'iCloud Keychain')),
    created_at: timestamp('Creation time'),
    last_used_at: opt(timestamp('Last sign-in with this passkey')),
  },
  { title: 'PasskeyRegistrationVerifyResponse', description: 'A registered passkey' },
)
export const PasskeyListResponse = Type.Array(PasskeyRegistrationVerifyResponse, {
  title: 'PasskeyListResponse',
  description: "The user's passkeys",
})
export const PasskeyAuthenticationOptionsRequest = Type.Object(
  { gotrue_meta_security: metaSecurity() },
  { title: 'PasskeyAuthenticationOptionsRequest', description: 'Captcha data when captcha is on; otherwise `{}`' },
)
export const PasskeyAuthenticationOptionsResponse = OptionsResponse(
  'PasskeyAuthenticationOptionsResponse',
  'Request options for a discoverable-credential sign-in',
  { challenge: 'Y2hhbGxlbmdl', timeout: 300000, rpId: 'example.com', userVerification: 'preferred' },
)
export const PasskeyAuthenticationVerifyRequest = Type.Object(
  {
    challenge_id: challengeId(),
    credential: credential('The PublicKeyCredential from navigator.credentials.get, JSON-serialised'),
  },
  { title: 'PasskeyAuthenticationVerifyRequest', description: 'Completes a passkey sign-in' },
)
export const PasskeyUpdateRequest = Type.Object(
  { friendly_name: str('New name', 'Work laptop', { minLength: 1, maxLength: 120 }) },
  { title: 'PasskeyUpdateRequest', description: 'Rename a passkey' },
)
/** Documentation only: the `{id}` segment is checked by the path guard, not by this schema. */
export const PasskeyIdParams = Type.Object({
  id: pathSegment('Passkey id', '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71'),
})
