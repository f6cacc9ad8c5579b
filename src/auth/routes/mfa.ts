import * as mfa from '../types/mfa.ts'
import { SessionResponse } from '../types/user.ts'
import { withDefaults, type GroupDefaults } from './entry.ts'
import { RATE, SMS_RATE, ok } from './shared.ts'

/** Multi-factor authentication: enrol, challenge, verify and unenrol factors. */
const MFA: GroupDefaults = { kind: 'typed', tag: 'MFA', group: 'mfa', bearer: true, rateLimited: false }

export const mfaRoutes = withDefaults(MFA, [
  {
    method: 'POST',
    path: '/factors',
    summary: 'Enrol an MFA factor',
    description:
      'Creates an unverified TOTP, phone or WebAuthn factor for the signed-in (non-anonymous) user. For TOTP the answer carries the secret and a QR code; the factor becomes verified with its first successful challenge.',
    nulRefused: ['friendly_name'],
    body: mfa.EnrollFactorRequest,
    examples: {
      totp: {
        summary: 'An authenticator app (TOTP)',
        value: { factor_type: 'totp', friendly_name: 'Authenticator app' },
      },
    },
    responses: ok('The new factor', mfa.EnrollFactorResponse),
    errors: {
      403: ['insufficient_aal'],
      422: [
        'mfa_totp_enroll_not_enabled',
        'mfa_phone_enroll_not_enabled',
        'mfa_webauthn_enroll_not_enabled',
        'too_many_enrolled_mfa_factors',
        'mfa_factor_name_conflict',
        'mfa_verified_factor_exists',
        'validation_failed',
      ],
      429: [SMS_RATE],
    },
  },
  {
    method: 'POST',
    path: '/factors/{factor_id}/challenge',
    summary: 'Challenge an MFA factor',
    description:
      'Creates a challenge for the factor (sends the code for phone factors). Supabase Auth does not read the body for TOTP factors, so an empty one is accepted. Rate limited by default.',
    body: mfa.ChallengeFactorRequest,
    bodyOptional: true,
    params: mfa.FactorIdParams,
    responses: ok('The challenge', mfa.ChallengeFactorResponse),
    errors: {
      403: ['insufficient_aal'],
      404: ['mfa_factor_not_found', 'validation_failed'],
      422: [
        'mfa_factor_not_found',
        'mfa_ip_address_mismatch',
        'mfa_phone_verify_not_enabled',
        'mfa_totp_verify_not_enabled',
        'mfa_webauthn_verify_not_enabled',
      ],
      429: [RATE, SMS_RATE],
    },
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/factors/{factor_id}/verify',
    session: 'issue',
    summary: 'Verify an MFA challenge',
    description:
      'Checks the code (or WebAuthn response) against the challenge. Success returns a new session at assurance level `aal2`. Rate limited by default.',
    body: mfa.VerifyFactorRequest,
    params: mfa.FactorIdParams,
    responses: ok('Session raised to aal2', SessionResponse),
    errors: {
      403: ['mfa_verification_rejected', 'otp_expired', 'insufficient_aal'],
      404: ['mfa_factor_not_found', 'validation_failed'],
      422: [
        'mfa_challenge_expired',
        'mfa_factor_not_found',
        'mfa_ip_address_mismatch',
        'mfa_verification_failed',
        'mfa_phone_verify_not_enabled',
        'mfa_totp_verify_not_enabled',
        'mfa_webauthn_verify_not_enabled',
      ],
      429: [RATE],
    },
    rateLimited: true,
  },
  {
    method: 'DELETE',
    path: '/factors/{factor_id}',
    summary: 'Unenrol an MFA factor',
    description:
      'Removes the factor. A verified factor can only be removed from an `aal2` session. The body is not read (supabase-js sends none).',
    params: mfa.FactorIdParams,
    responses: ok('The removed factor', mfa.UnenrollFactorResponse),
    errors: {
      403: ['insufficient_aal'],
      404: ['mfa_factor_not_found', 'validation_failed'],
      422: ['insufficient_aal', 'mfa_factor_not_found'],
    },
  },
])
