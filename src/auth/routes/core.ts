import { Type } from 'typebox'
import { str } from '../types/common.ts'
import * as req from '../types/requests.ts'
import { HealthResponse, SettingsResponse } from '../types/server.ts'
import { MessageResponse, SessionResponse, SignupResponse, UserObject, VerifyMessageResponse } from '../types/user.ts'
import { withDefaults, type GroupDefaults } from './entry.ts'
import { EMAIL_RATE, RATE, SMS_RATE, noContent, ok, redirect, redirectQuery, redirectTo } from './shared.ts'

/**
 * The core group: sign-up, sign-in, sessions, the signed-in user, e-mail links and external
 * providers. It cannot be turned off. Its signing keys are listed with the OAuth server (./oauth.ts),
 * where they sit in the document.
 */
const CORE: GroupDefaults = { kind: 'typed', tag: 'Auth', group: 'core', bearer: false, rateLimited: false }

/** What both spellings of `/reauthenticate` can answer: they reach the same backend handler. */
const REAUTHENTICATE_ERRORS = {
  403: ['otp_expired'],
  422: ['email_not_confirmed', 'phone_not_confirmed', 'reauthentication_not_valid'],
  429: [EMAIL_RATE, SMS_RATE],
} as const

export const coreRoutes = withDefaults(CORE, [
  // Typed JSON endpoints
  {
    method: 'GET',
    path: '/health',
    summary: 'Backend health',
    description:
      'Answers when Supabase Auth is running; it does not check the database. Use it for liveness probes of the backend behind authgate.',
    responses: ok('Supabase Auth is up', HealthResponse),
    errors: {},
  },
  {
    method: 'GET',
    path: '/settings',
    summary: 'Public auth settings',
    description:
      'Which sign-in methods are enabled, whether sign-ups are allowed or confirmed automatically, and whether passkeys are on. Public.',
    responses: ok('Enabled providers and sign-up settings', SettingsResponse),
    errors: {},
    cacheable: true,
  },
  {
    method: 'POST',
    path: '/signup',
    session: 'issue',
    summary: 'Sign up with e-mail or phone and password',
    description:
      'Returns a session when the user is confirmed automatically, otherwise the user awaiting confirmation. Without e-mail and phone this is an anonymous sign-in.',
    emptyIsAbsent: ['email', 'phone', 'code_challenge', 'code_challenge_method'],
    nulRefused: ['data'],
    body: req.SignupRequest,
    query: redirectQuery,
    examples: {
      email: {
        summary: 'E-mail sign-up',
        value: { email: 'user@example.com', password: 'correct-horse-battery-7', data: { name: 'Ada' } },
      },
      phone: {
        summary: 'Phone sign-up',
        description: 'Answers the user awaiting confirmation; the code sent by SMS goes to `POST /verify`.',
        value: { phone: '+15550000001', password: 'correct-horse-battery-7', channel: 'sms' },
      },
      anonymous: { summary: 'Anonymous sign-in', value: { data: {} } },
    },
    responses: ok('Session, or the unconfirmed user', SignupResponse),
    errors: {
      400: ['email_provider_disabled', 'phone_provider_disabled', 'email_address_not_authorized', 'captcha_failed'],
      422: [
        'user_already_exists',
        'weak_password',
        'signup_disabled',
        'anonymous_provider_disabled',
        'email_address_invalid',
        'validation_failed',
        'sms_send_failed',
      ],
      429: [RATE, EMAIL_RATE, SMS_RATE],
    },
    rateLimited: true,
    account: 'sign-in',
    sendsMessages: true,
  },
  {
    method: 'POST',
    path: '/token',
    session: 'issue',
    summary: 'Sign in or refresh a session',
    description:
      'The grant is chosen by the `grant_type` query parameter: `password`, `refresh_token`, `pkce` or `id_token`.',
    emptyIsAbsent: ['email', 'phone'],
    body: req.TokenRequest,
    query: Type.Object({
      // Required: Supabase Auth refuses every request without it (400 `invalid_credentials`).
      grant_type: str('Grant: `password`, `refresh_token`, `pkce`, `id_token` or `web3`', 'password', {
        enum: ['password', 'refresh_token', 'pkce', 'id_token', 'web3'],
      }),
      redirect_to: Type.Optional(redirectTo),
    }),
    examples: {
      password: {
        summary: 'Password sign-in (`grant_type=password`)',
        value: { email: 'user@example.com', password: 'correct-horse-battery-7' },
        query: { grant_type: 'password' },
      },
    },
    responses: ok('New session', SessionResponse),
    requiredByQuery: [
      {
        param: 'grant_type',
        value: 'pkce',
        fields: ['auth_code', 'code_verifier'],
        answer: {
          code: 'validation_failed',
          status: 400,
          message: 'invalid request: both auth code and code verifier should be non-empty',
        },
      },
    ],
    // Each grant type's own struct (the JSON names of its fields); the others' fields are not read.
    decodedByQuery: {
      param: 'grant_type',
      fields: {
        password: ['email', 'phone', 'password'],
        refresh_token: ['refresh_token'],
        pkce: ['auth_code', 'code_verifier'],
        id_token: ['id_token', 'access_token', 'nonce', 'provider', 'client_id', 'issuer', 'link_identity'],
        web3: ['message', 'signature', 'chain'],
      },
    },
    oauthErrors: true,
    errors: {
      400: [
        'invalid_credentials',
        'email_not_confirmed',
        'phone_not_confirmed',
        'refresh_token_not_found',
        'refresh_token_already_used',
        'session_not_found',
        'session_expired',
        'user_banned',
        'bad_code_verifier',
        'provider_disabled',
        'captcha_failed',
        'invalid request',
        'invalid nonce',
      ],
      403: ['bad_jwt', 'session_not_found', 'user_not_found'],
      404: ['flow_state_not_found'],
      409: ['conflict'],
      422: [
        'email_provider_disabled',
        'phone_provider_disabled',
        'flow_state_expired',
        'identity_already_exists',
        'user_banned',
      ],
      429: [RATE],
    },
    rateLimited: true,
    account: 'sign-in',
  },
  {
    method: 'POST',
    path: '/otp',
    summary: 'Send a one-time code or magic link',
    description:
      'Sends a magic link or a one-time code by e-mail, or a code by SMS/WhatsApp. Creates the user unless `create_user` is `false`. Exchange the code at `POST /verify`.',
    emptyIsAbsent: ['email', 'phone', 'code_challenge', 'code_challenge_method'],
    nulRefused: ['data'],
    body: req.OTPRequest,
    query: redirectQuery,
    examples: {
      email: { summary: 'Magic link or code by e-mail', value: { email: 'user@example.com' } },
      phone: { summary: 'Code by SMS', value: { phone: '+15550000001', channel: 'sms' } },
    },
    responses: ok('Sent (`message_id` for SMS)', MessageResponse),
    errors: {
      400: ['phone_provider_disabled', 'captcha_failed'],
      422: ['email_provider_disabled', 'otp_disabled', 'sms_send_failed', 'validation_failed'],
      429: [RATE, EMAIL_RATE, SMS_RATE],
    },
    rateLimited: true,
    account: 'message',
    sendsMessages: true,
  },
  {
    method: 'POST',
    path: '/magiclink',
    summary: 'Send a magic link (deprecated: use `POST /otp`)',
    description:
      'The older form of `POST /otp` with an e-mail, still served by Supabase Auth: sends a magic link, or signs an unknown address up and sends its confirmation. Validated, rate limited, limited per account and counted against the e-mail budget as `POST /otp` is.',
    deprecated: true,
    emptyIsAbsent: ['email', 'code_challenge', 'code_challenge_method'],
    nulRefused: ['data'],
    body: req.MagicLinkRequest,
    query: redirectQuery,
    examples: {
      email: { summary: 'Magic link by e-mail', value: { email: 'user@example.com' } },
    },
    responses: ok('Sent', MessageResponse),
    errors: {
      400: ['captcha_failed', 'validation_failed', 'email_address_not_authorized'],
      422: ['email_provider_disabled', 'signup_disabled', 'validation_failed'],
      429: [RATE, EMAIL_RATE],
    },
    rateLimited: true,
    account: 'message',
    sendsMessages: true,
  },
  {
    method: 'POST',
    path: '/verify',
    session: 'issue',
    summary: 'Verify a one-time code',
    description: "Exchanges a one-time code (with `email` or `phone`) or an e-mail link's `token_hash` for a session.",
    emptyIsAbsent: ['type', 'token', 'token_hash', 'email', 'phone', 'redirect_to'],
    nulRefused: ['token_hash'],
    body: req.VerifyRequest,
    query: redirectQuery,
    examples: {
      sms: {
        summary: 'SMS code',
        description: 'The code sent by `POST /otp` or a phone sign-up.',
        value: { type: 'sms', phone: '+15550000001', token: '123456' },
      },
    },
    responses: ok(
      'Session (or a message for the first half of a secure e-mail change)',
      Type.Union([SessionResponse, VerifyMessageResponse]),
    ),
    errors: {
      403: ['otp_expired', 'user_banned'],
      404: ['flow_state_not_found'],
      422: ['validation_failed'],
      429: [RATE],
    },
  },
  {
    method: 'POST',
    path: '/recover',
    summary: 'Send a password recovery e-mail',
    description:
      'Sends a password recovery link to the address. Answers 200 also for unknown addresses, so it cannot be used to find accounts.',
    emptyIsAbsent: ['email', 'code_challenge', 'code_challenge_method'],
    body: req.RecoverRequest,
    query: redirectQuery,
    examples: { email: { summary: 'Recovery e-mail', value: { email: 'user@example.com' } } },
    responses: ok('Sent (also for unknown addresses)', MessageResponse),
    errors: { 400: ['email_provider_disabled', 'captcha_failed'], 422: ['validation_failed'], 429: [RATE, EMAIL_RATE] },
    rateLimited: true,
    account: 'message',
    sendsMessages: true,
  },
  {
    method: 'POST',
    path: '/resend',
    summary: 'Resend a confirmation message',
    description: 'Resends the sign-up confirmation or the e-mail/phone change message.',
    emptyIsAbsent: ['type', 'email', 'phone', 'code_challenge', 'code_challenge_method'],
    body: req.ResendRequest,
    query: redirectQuery,
    examples: {
      signup: { summary: 'Sign-up confirmation again', value: { type: 'signup', email: 'user@example.com' } },
    },
    responses: ok('Sent', MessageResponse),
    errors: { 400: ['captcha_failed'], 422: ['validation_failed'], 429: [RATE, EMAIL_RATE, SMS_RATE] },
    rateLimited: true,
    account: 'message',
    sendsMessages: true,
  },
  {
    method: 'POST',
    path: '/logout',
    session: 'signOut',
    summary: 'Sign out',
    description:
      'Revokes the refresh tokens of the session (`scope=local`), of every session of the user (`global`, the default) or of the others (`others`). The access token stays valid until it expires.',
    query: Type.Object({
      scope: Type.Optional(
        str('`global` (default), `local` or `others`', 'global', { enum: ['global', 'local', 'others'] }),
      ),
    }),
    responses: noContent('Signed out'),
    errors: {},
    bearer: true,
  },
  {
    method: 'GET',
    path: '/user',
    summary: 'Get the signed-in user',
    description: 'The user the bearer token belongs to.',
    responses: ok('The user', UserObject),
    errors: {},
    bearer: true,
  },
  {
    method: 'PUT',
    path: '/user',
    sendsMessages: true,
    summary: 'Update the signed-in user',
    description:
      'Changes e-mail, phone, password or `user_metadata` (`data`). An e-mail or phone change is confirmed by a message to the new address.',
    emptyIsAbsent: ['email', 'phone', 'code_challenge', 'code_challenge_method'],
    nulRefused: ['data'],
    body: req.UpdateUserRequest,
    query: redirectQuery,
    examples: { metadata: { summary: 'Change user metadata', value: { data: { name: 'Ada Lovelace' } } } },
    responses: ok('The updated user', UserObject),
    errors: {
      400: ['reauthentication_needed', 'current_password_required', 'current_password_invalid'],
      401: ['insufficient_aal'],
      403: ['not_admin'],
      422: [
        'same_password',
        'email_exists',
        'phone_exists',
        'reauthentication_not_valid',
        'weak_password',
        'user_sso_managed',
        'validation_failed',
      ],
      429: [RATE, EMAIL_RATE, SMS_RATE],
    },
    bearer: true,
  },
  {
    method: 'GET',
    path: '/reauthenticate',
    summary: 'Send a reauthentication code',
    description:
      "Sends a one-time code to the user's e-mail or phone, to be given as `nonce` to `PUT /user` when a password change requires reauthentication.",
    responses: ok('Sent', MessageResponse),
    errors: REAUTHENTICATE_ERRORS,
    bearer: true,
    // Sends an e-mail or SMS: a navigation from another site must not trigger it with the cookie.
    cookieGuard: 'sideEffect',
  },
  {
    method: 'POST',
    path: '/reauthenticate',
    summary: 'Send a reauthentication code (POST form)',
    bodyOptional: true,
    description: 'Supabase Auth only serves `GET /reauthenticate`; this route reaches it as a GET, without the body.',
    body: req.ReauthenticateRequest,
    examples: { empty: { summary: 'No body needed', value: {} } },
    responses: ok('Sent', MessageResponse),
    errors: REAUTHENTICATE_ERRORS,
    bearer: true,
    backend: { method: 'GET' },
  },

  // Redirect endpoints, relayed byte for byte
  {
    method: 'GET',
    path: '/authorize',
    kind: 'relay',
    summary: 'Start an external OAuth sign-in',
    description: 'Redirects the browser to the provider. All query parameters reach Supabase Auth unchanged.',
    query: Type.Object({
      provider: str('External provider, e.g. `github`', 'github'),
      redirect_to: Type.Optional(redirectTo),
      scopes: Type.Optional(str('Extra provider scopes', 'repo gist')),
      code_challenge: Type.Optional(str('PKCE challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')),
      code_challenge_method: Type.Optional(str('PKCE method', 's256')),
    }),
    responses: { 302: redirect('To the provider') },
    errors: { 400: ['validation_failed'], 404: ['invite_not_found'] },
  },
  {
    method: 'GET',
    path: '/callback',
    kind: 'relay',
    summary: 'External provider callback',
    description:
      'Where the external provider sends the browser back. Supabase Auth finishes the sign-in and redirects to the application with tokens in the fragment or a `code` for PKCE.',
    responses: {
      302: redirect('To the application'),
      303: redirect('To the site URL with an error (bad state)'),
    },
    errors: { 400: ['bad_oauth_callback', 'bad_oauth_state', 'validation_failed'] },
  },
  {
    method: 'POST',
    path: '/callback',
    kind: 'relay',
    summary: 'External provider callback (form_post)',
    description: 'Used by providers that post the result as a form (Apple). The form body is forwarded as is.',
    responses: {
      302: redirect('To the application'),
      303: redirect('To the site URL with an error (bad state)'),
    },
    errors: { 400: ['bad_oauth_callback', 'bad_oauth_state', 'validation_failed'] },
  },
  {
    method: 'GET',
    path: '/verify',
    session: 'issue',
    kind: 'relay',
    summary: 'Follow an e-mail link',
    description:
      'The link in confirmation, magic-link, invite, recovery and e-mail change messages. Redirects to `redirect_to` with tokens in the fragment, or `?code=` for PKCE. Relayed byte for byte.',
    query: Type.Object({
      token: str('Hashed token from the e-mail', 'pkce_5d41402abc4b2a76b9719d911017c592'),
      // Checked by authgate: with a PKCE token Supabase Auth fails (500) on a type it does not know.
      type: str('Kind of link', 'signup', { enum: ['signup', 'invite', 'recovery', 'magiclink', 'email_change'] }),
      redirect_to: Type.Optional(redirectTo),
    }),
    queryChecked: true,
    responses: {
      303: redirect('To the application, tokens in the fragment or `?code=`; or with the error in the fragment'),
    },
    errors: { 400: ['validation_failed'], 429: [RATE] },
  },
])
