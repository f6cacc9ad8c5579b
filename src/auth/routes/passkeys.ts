import * as pk from '../types/passkeys.ts'
import { SessionResponse } from '../types/user.ts'
import { withDefaults, type GroupDefaults } from './entry.ts'
import { RATE, noContent, ok } from './shared.ts'

const PASSKEYS_OFF = 'passkey_disabled'

/** Passkey registration, sign-in and management. */
const PASSKEYS: GroupDefaults = { kind: 'typed', tag: 'Passkey', group: 'passkeys', bearer: true, rateLimited: false }

export const passkeyRoutes = withDefaults(PASSKEYS, [
  {
    method: 'GET',
    path: '/passkeys',
    summary: "List the user's passkeys",
    description: 'The passkeys registered by the signed-in user.',
    responses: ok('Passkeys', pk.PasskeyListResponse),
    errors: { 404: [PASSKEYS_OFF] },
  },
  {
    method: 'POST',
    path: '/passkeys/registration/options',
    summary: 'Start a passkey registration',
    bodyOptional: true,
    description:
      "Creation options for `navigator.credentials.create()`. The WebAuthn relying party is the origin users see, so `GOTRUE_WEBAUTHN_RP_ORIGINS` must include authgate's public origin.",
    body: pk.PasskeyRegistrationOptionsRequest,
    examples: { empty: { summary: 'No body needed', value: {} } },
    responses: ok('Creation options', pk.PasskeyRegistrationOptionsResponse),
    errors: {
      403: ['insufficient_aal', 'no_authorization'],
      404: [PASSKEYS_OFF],
      422: ['too_many_passkeys', 'validation_failed'],
    },
  },
  {
    method: 'POST',
    path: '/passkeys/registration/verify',
    summary: 'Finish a passkey registration',
    description: 'Checks the new credential against the challenge and stores the passkey.',
    body: pk.PasskeyRegistrationVerifyRequest,
    responses: ok('The new passkey', pk.PasskeyRegistrationVerifyResponse),
    errors: {
      400: ['webauthn_challenge_not_found', 'webauthn_challenge_expired', 'webauthn_verification_failed'],
      403: ['insufficient_aal', 'no_authorization'],
      404: [PASSKEYS_OFF],
      422: ['webauthn_credential_exists', 'too_many_passkeys', 'validation_failed'],
    },
  },
  {
    method: 'POST',
    path: '/passkeys/authentication/options',
    summary: 'Start a passkey sign-in',
    bodyOptional: true,
    description:
      'Request options for `navigator.credentials.get()` with a discoverable credential: no user needs to be named.',
    body: pk.PasskeyAuthenticationOptionsRequest,
    examples: { empty: { summary: 'No body needed', value: {} } },
    responses: ok('Request options', pk.PasskeyAuthenticationOptionsResponse),
    errors: { 400: ['captcha_failed'], 404: [PASSKEYS_OFF], 429: [RATE] },
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/passkeys/authentication/verify',
    session: 'issue',
    summary: 'Finish a passkey sign-in',
    description: 'Checks the assertion against the challenge and returns a session.',
    body: pk.PasskeyAuthenticationVerifyRequest,
    responses: ok('New session', SessionResponse),
    errors: {
      400: ['webauthn_challenge_not_found', 'webauthn_challenge_expired', 'webauthn_verification_failed'],
      403: ['email_not_confirmed', 'phone_not_confirmed', 'user_banned'],
      404: [PASSKEYS_OFF],
    },
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'PATCH',
    path: '/passkeys/{id}',
    summary: 'Rename a passkey',
    description:
      "Sets the passkey's display name. The id must be a single path segment; anything else is rejected before reaching the backend.",
    params: pk.PasskeyIdParams,
    body: pk.PasskeyUpdateRequest,
    responses: ok('The renamed passkey', pk.PasskeyRegistrationVerifyResponse),
    errors: { 404: ['validation_failed', PASSKEYS_OFF] },
  },
  {
    method: 'DELETE',
    path: '/passkeys/{id}',
    summary: 'Delete a passkey',
    description:
      'Removes the passkey. The id must be a single path segment; anything else is rejected before reaching the backend.',
    params: pk.PasskeyIdParams,
    responses: noContent('Deleted'),
    errors: { 403: ['insufficient_aal'], 404: ['validation_failed', PASSKEYS_OFF] },
  },
])
