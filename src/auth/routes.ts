import { Type, type TSchema } from 'typebox'
import type { RouteGroup } from './groups.ts'
import { pathSegment, str, uuid } from './types/common.ts'
import { nullableOptionals } from './types/nullable.ts'
import * as mfa from './types/mfa.ts'
import * as oauth from './types/oauth.ts'
import * as pk from './types/passkeys.ts'
import * as req from './types/requests.ts'
import { HealthResponse, SettingsResponse } from './types/server.ts'
import { SSORequest, UrlResponse } from './types/sso.ts'
import { MessageResponse, SessionResponse, SignupResponse, UserObject, VerifyMessageResponse } from './types/user.ts'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type AuthTag = 'Auth' | 'OAuth' | 'Passkey' | 'MFA' | 'SSO'

export interface ResponseDoc {
  description: string
  schema?: TSchema
  headers?: Record<string, { description: string; required?: boolean; schema: Record<string, unknown> }>
}

/** A whole request body (and the query it goes with) documented as one named example. */
export interface RequestExample {
  summary: string
  description?: string
  value: Record<string, unknown>
  /** Query parameters the example needs (e.g. `grant_type`), when they differ from the parameters' own examples. */
  query?: Record<string, string>
}

/**
 * One mounted route. Mounting (src/auth/mount.ts), rate limiting and the OpenAPI document all read
 * this table and nothing else lists routes.
 */
export interface AuthRoute {
  method: HttpMethod
  /**
   * Path template relative to the prefix. Every `{name}` segment is checked by the path guard
   * (src/proxy/path-guard.ts) and re-encoded into the backend path.
   */
  path: string
  /** typed: validated JSON, original bytes forwarded. relay: no validation, everything byte for byte. */
  kind: 'typed' | 'relay'
  tag: AuthTag
  /** Operators turn features off by group (src/auth/groups.ts). */
  group: RouteGroup
  summary: string
  description?: string
  /** Request body type. Absent: the backend reads no body and any body is forwarded untouched. */
  body?: TSchema
  /** The backend does not read the body (docs/decisions.md, D5): an empty one is accepted. */
  bodyOptional?: boolean
  /**
   * Query parameters. Documented only, unless `queryChecked`: the raw query string is always
   * forwarded and the backend checks it.
   */
  query?: TSchema
  /**
   * The gateway validates the query against `query` before forwarding (values as the backend reads
   * them: the first of a repeated name), where the backend would fail on input it does not check.
   */
  queryChecked?: boolean
  /**
   * Whole requests that succeed against a Supabase Auth with the features of the route turned on,
   * in the order a reader would try them (the first is what "Try it" sends). Checked against the
   * document's own schema by the unit tests and sent to the real server by the end-to-end suite.
   */
  examples?: Record<string, RequestExample>
  params?: TSchema
  /** Success responses by status (docs/decisions.md, D6: the backend's real statuses). */
  responses: Record<number, ResponseDoc>
  /**
   * Supabase Auth's own error answers on this route, by status: the error codes it uses there
   * (from its source, checked by the end-to-end suite). The gateway's statuses, the bearer-token
   * failures of `bearer` routes and the body failures of routes with a body are added by the
   * documentation (src/auth/route-docs.ts); only what is particular to the route is listed here.
   */
  errors: Partial<Record<number, readonly string[]>>
  /** Some error answers use the OAuth shape `{error, error_description}` (always 400). */
  oauthErrors?: boolean
  /** The backend requires a user's bearer token (documentation; the gateway itself authenticates nothing). */
  bearer: boolean
  /** Limited by default (docs/decisions.md, D11); operators may change the set. */
  rateLimited: boolean
  /** Accepts `application/x-www-form-urlencoded` besides JSON (OAuth clients send forms). */
  form?: boolean
  /** The backend's answer is the same for every client: served from the response cache while fresh. */
  cacheable?: boolean
  /** Where the request goes when it differs from method + path (docs/decisions.md, D8). */
  backend?: { method?: HttpMethod; path?: string }
  /**
   * Also served at the origin root with the well-known segment before the prefix
   * (`/.well-known/<name><prefix>`), where RFC 8414 §3.1 and OpenID discovery clients look for the
   * metadata of an issuer whose URL has a path.
   */
  rootAlias?: boolean
}

// Error codes Supabase Auth uses on many routes.
const RATE = 'over_request_rate_limit'
const EMAIL_RATE = 'over_email_send_rate_limit'
const SMS_RATE = 'over_sms_send_rate_limit'
/** The OAuth 2.1 server is off (`GOTRUE_OAUTH_SERVER_ENABLED`). */
const OAUTH_OFF = 'feature_disabled'
const PASSKEYS_OFF = 'passkey_disabled'
const SAML_OFF = 'saml_provider_disabled'

const redirectTo = str(
  'Where to send the user afterwards (must pass the backend allow list)',
  'http://localhost:3000/welcome',
)
const redirectQuery = Type.Object({ redirect_to: Type.Optional(redirectTo) })
const location = {
  Location: { description: 'Redirect target', required: true, schema: { type: 'string', format: 'uri' } },
}
const ok = (description: string, schema?: TSchema): Record<number, ResponseDoc> => ({
  200: schema ? { description, schema } : { description },
})
const noContent = (description: string): Record<number, ResponseDoc> => ({ 204: { description } })
const redirect = (description: string): ResponseDoc => ({ description, headers: location })

const TABLE: readonly AuthRoute[] = [
  // Core: typed JSON endpoints
  {
    method: 'GET',
    path: '/health',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Backend health',
    description:
      'Answers when Supabase Auth is running; it does not check the database. Use it for liveness probes of the backend behind authgate.',
    responses: ok('Supabase Auth is up', HealthResponse),
    errors: {},
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/settings',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Public auth settings',
    description:
      'Which sign-in methods are enabled, whether sign-ups are allowed or confirmed automatically, and whether passkeys are on. Public.',
    responses: ok('Enabled providers and sign-up settings', SettingsResponse),
    errors: {},
    bearer: false,
    rateLimited: false,
    cacheable: true,
  },
  {
    method: 'POST',
    path: '/signup',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Sign up with e-mail or phone and password',
    description:
      'Returns a session when the user is confirmed automatically, otherwise the user awaiting confirmation. Without e-mail and phone this is an anonymous sign-in.',
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
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/token',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Sign in or refresh a session',
    description:
      'The grant is chosen by the `grant_type` query parameter: `password`, `refresh_token`, `pkce` or `id_token`.',
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
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/otp',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Send a one-time code or magic link',
    description:
      'Sends a magic link or a one-time code by e-mail, or a code by SMS/WhatsApp. Creates the user unless `create_user` is `false`. Exchange the code at `POST /verify`.',
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
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/verify',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Verify a one-time code',
    description: "Exchanges a one-time code (with `email` or `phone`) or an e-mail link's `token_hash` for a session.",
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
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/recover',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Send a password recovery e-mail',
    description:
      'Sends a password recovery link to the address. Answers 200 also for unknown addresses, so it cannot be used to find accounts.',
    body: req.RecoverRequest,
    query: redirectQuery,
    examples: { email: { summary: 'Recovery e-mail', value: { email: 'user@example.com' } } },
    responses: ok('Sent (also for unknown addresses)', MessageResponse),
    errors: { 400: ['email_provider_disabled', 'captcha_failed'], 422: ['validation_failed'], 429: [RATE, EMAIL_RATE] },
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/resend',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Resend a confirmation message',
    description: 'Resends the sign-up confirmation or the e-mail/phone change message.',
    body: req.ResendRequest,
    query: redirectQuery,
    examples: {
      signup: { summary: 'Sign-up confirmation again', value: { type: 'signup', email: 'user@example.com' } },
    },
    responses: ok('Sent', MessageResponse),
    errors: { 400: ['captcha_failed'], 422: ['validation_failed'], 429: [RATE, EMAIL_RATE, SMS_RATE] },
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/logout',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
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
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/user',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Get the signed-in user',
    description: 'The user the bearer token belongs to.',
    responses: ok('The user', UserObject),
    errors: {},
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'PUT',
    path: '/user',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Update the signed-in user',
    description:
      'Changes e-mail, phone, password or `user_metadata` (`data`). An e-mail or phone change is confirmed by a message to the new address.',
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
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/reauthenticate',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Send a reauthentication code',
    description:
      "Sends a one-time code to the user's e-mail or phone, to be given as `nonce` to `PUT /user` when a password change requires reauthentication.",
    responses: ok('Sent', MessageResponse),
    errors: {
      403: ['otp_expired'],
      422: ['email_not_confirmed', 'phone_not_confirmed', 'reauthentication_not_valid'],
      429: [EMAIL_RATE, SMS_RATE],
    },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/reauthenticate',
    kind: 'typed',
    tag: 'Auth',
    group: 'core',
    summary: 'Send a reauthentication code (POST form)',
    bodyOptional: true,
    description: 'Supabase Auth only serves `GET /reauthenticate`; this route reaches it as a GET, without the body.',
    body: req.ReauthenticateRequest,
    examples: { empty: { summary: 'No body needed', value: {} } },
    responses: ok('Sent', MessageResponse),
    errors: {
      403: ['otp_expired'],
      422: ['email_not_confirmed', 'phone_not_confirmed', 'reauthentication_not_valid'],
      429: [EMAIL_RATE, SMS_RATE],
    },
    bearer: true,
    rateLimited: false,
    backend: { method: 'GET' },
  },

  // Core: redirect endpoints, relayed byte for byte
  {
    method: 'GET',
    path: '/authorize',
    kind: 'relay',
    tag: 'Auth',
    group: 'core',
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
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/callback',
    kind: 'relay',
    tag: 'Auth',
    group: 'core',
    summary: 'External provider callback',
    description:
      'Where the external provider sends the browser back. Supabase Auth finishes the sign-in and redirects to the application with tokens in the fragment or a `code` for PKCE.',
    responses: {
      302: redirect('To the application'),
      303: redirect('To the site URL with an error (bad state)'),
    },
    errors: { 400: ['bad_oauth_callback', 'bad_oauth_state', 'validation_failed'] },
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/callback',
    kind: 'relay',
    tag: 'Auth',
    group: 'core',
    summary: 'External provider callback (form_post)',
    description: 'Used by providers that post the result as a form (Apple). The form body is forwarded as is.',
    responses: {
      302: redirect('To the application'),
      303: redirect('To the site URL with an error (bad state)'),
    },
    errors: { 400: ['bad_oauth_callback', 'bad_oauth_state', 'validation_failed'] },
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/verify',
    kind: 'relay',
    tag: 'Auth',
    group: 'core',
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
    bearer: false,
    rateLimited: false,
  },

  // OAuth 2.1 server
  {
    method: 'GET',
    path: '/.well-known/oauth-authorization-server',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: 'Authorization server metadata',
    description:
      'RFC 8414 metadata of the OAuth 2.1 server: endpoints, scopes, grant types and PKCE methods. 404 when the OAuth server is off. Also served at `/.well-known/oauth-authorization-server<prefix>` (RFC 8414 §3.1 path insertion).',
    responses: ok('RFC 8414 metadata', oauth.OAuthServerMetadata),
    errors: { 404: [OAUTH_OFF] },
    bearer: false,
    rateLimited: false,
    cacheable: true,
    rootAlias: true,
  },
  {
    method: 'GET',
    path: '/.well-known/openid-configuration',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: 'OpenID Connect discovery',
    description:
      'OpenID Connect discovery document (the same body as the RFC 8414 metadata). Also served at `/.well-known/openid-configuration<prefix>` for clients that insert the well-known segment before the path.',
    responses: ok('Discovery document', oauth.OAuthServerMetadata),
    errors: {},
    bearer: false,
    rateLimited: false,
    cacheable: true,
    rootAlias: true,
  },
  {
    method: 'GET',
    path: '/.well-known/jwks.json',
    kind: 'typed',
    tag: 'OAuth',
    group: 'core',
    summary: 'Signing keys',
    description:
      'Public keys that sign access and ID tokens. Empty when Supabase Auth signs with a shared secret only.',
    responses: ok('JSON Web Key Set', oauth.JWKSResponse),
    errors: {},
    bearer: false,
    rateLimited: false,
    cacheable: true,
  },
  {
    method: 'GET',
    path: '/oauth/authorize',
    kind: 'relay',
    tag: 'OAuth',
    group: 'oauth',
    summary: 'OAuth 2.1 authorization',
    description:
      'Starts an authorization-code flow with PKCE for a registered client: redirects to the consent page of the site, or back to `redirect_uri` with an error.',
    query: Type.Object({
      client_id: str('Registered client id', '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60'),
      redirect_uri: str('A registered redirect URI', 'http://localhost:3000/callback'),
      response_type: Type.Optional(str('Only `code`', 'code')),
      scope: Type.Optional(str('Space-separated scopes', 'openid email')),
      state: Type.Optional(str('Opaque value echoed back', 'af0ifjsldkj')),
      code_challenge: str('PKCE challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'),
      code_challenge_method: str('`S256` or `plain`', 'S256'),
      nonce: Type.Optional(str('Copied into the ID token', 'n-0S6_WzA2Mj')),
    }),
    responses: { 302: redirect('To the consent page, or to `redirect_uri` with an error') },
    errors: { 400: ['validation_failed', 'oauth_client_not_found'], 404: [OAUTH_OFF] },
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/oauth/token',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: 'OAuth 2.1 token endpoint',
    description:
      'JSON or form-encoded. Clients authenticate with HTTP Basic (`client_secret_basic`), body credentials (`client_secret_post`) or `client_id` alone (public clients).',
    body: oauth.OAuthTokenRequest,
    form: true,
    responses: ok('Tokens', oauth.OAuthTokenResponse),
    oauthErrors: true,
    errors: {
      400: [
        'invalid_credentials',
        'invalid_request',
        'invalid_client',
        'invalid_grant',
        'unsupported_grant_type',
        'access_denied',
        'refresh_token_not_found',
        'refresh_token_already_used',
        'session_not_found',
        'session_expired',
      ],
      404: [OAUTH_OFF],
    },
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/oauth/clients/register',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: 'Register an OAuth client',
    description:
      'RFC 7591 dynamic client registration, when the backend allows it (`GOTRUE_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION`). Rate limited by authgate.',
    body: oauth.ClientRegistrationRequest,
    examples: {
      public: {
        summary: 'A public client (PKCE, no secret)',
        value: {
          client_name: 'My app',
          redirect_uris: ['http://localhost:3000/callback'],
          token_endpoint_auth_method: 'none',
        },
      },
    },
    responses: { 201: { description: 'Registered', schema: oauth.ClientRegistrationResponse } },
    errors: {
      400: ['validation_failed'],
      403: ['oauth_dynamic_client_registration_disabled'],
      404: [OAUTH_OFF],
      429: [RATE],
    },
    bearer: false,
    rateLimited: true,
  },
  {
    method: 'GET',
    path: '/oauth/userinfo',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: 'OpenID Connect UserInfo',
    description: 'OpenID Connect UserInfo for the bearer token; the claims depend on the scopes the user granted.',
    responses: ok('Claims for the granted scopes', oauth.OAuthUserInfo),
    errors: { 404: [OAUTH_OFF] },
    bearer: true,
    rateLimited: false,
  },

  // Passkeys
  {
    method: 'GET',
    path: '/passkeys',
    kind: 'typed',
    tag: 'Passkey',
    group: 'passkeys',
    summary: "List the user's passkeys",
    description: 'The passkeys registered by the signed-in user.',
    responses: ok('Passkeys', pk.PasskeyListResponse),
    errors: { 404: [PASSKEYS_OFF] },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/passkeys/registration/options',
    kind: 'typed',
    tag: 'Passkey',
    group: 'passkeys',
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
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/passkeys/registration/verify',
    kind: 'typed',
    tag: 'Passkey',
    group: 'passkeys',
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
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/passkeys/authentication/options',
    kind: 'typed',
    tag: 'Passkey',
    group: 'passkeys',
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
    kind: 'typed',
    tag: 'Passkey',
    group: 'passkeys',
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
    kind: 'typed',
    tag: 'Passkey',
    group: 'passkeys',
    summary: 'Rename a passkey',
    description:
      "Sets the passkey's display name. The id must be a single path segment; anything else is rejected before reaching the backend.",
    params: pk.PasskeyIdParams,
    body: pk.PasskeyUpdateRequest,
    responses: ok('The renamed passkey', pk.PasskeyRegistrationVerifyResponse),
    errors: { 404: ['validation_failed', PASSKEYS_OFF] },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'DELETE',
    path: '/passkeys/{id}',
    kind: 'typed',
    tag: 'Passkey',
    group: 'passkeys',
    summary: 'Delete a passkey',
    description:
      'Removes the passkey. The id must be a single path segment; anything else is rejected before reaching the backend.',
    params: pk.PasskeyIdParams,
    responses: noContent('Deleted'),
    errors: { 403: ['insufficient_aal'], 404: ['validation_failed', PASSKEYS_OFF] },
    bearer: true,
    rateLimited: false,
  },
  // Everything else supabase-js calls on the user's behalf: MFA, identity linking, SSO, and the
  // consent page and grants of the OAuth server. The admin API stays unmounted.
  {
    method: 'POST',
    path: '/factors',
    kind: 'typed',
    tag: 'MFA',
    group: 'mfa',
    summary: 'Enrol an MFA factor',
    description:
      'Creates an unverified TOTP, phone or WebAuthn factor for the signed-in (non-anonymous) user. For TOTP the answer carries the secret and a QR code; the factor becomes verified with its first successful challenge.',
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
        'mfa_web_authn_enroll_not_enabled',
        'too_many_enrolled_mfa_factors',
        'mfa_factor_name_conflict',
        'mfa_verified_factor_exists',
        'validation_failed',
      ],
      429: [SMS_RATE],
    },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/factors/{factor_id}/challenge',
    kind: 'typed',
    tag: 'MFA',
    group: 'mfa',
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
        'mfa_web_authn_verify_not_enabled',
      ],
      429: [RATE, SMS_RATE],
    },
    bearer: true,
    rateLimited: true,
  },
  {
    method: 'POST',
    path: '/factors/{factor_id}/verify',
    kind: 'typed',
    tag: 'MFA',
    group: 'mfa',
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
        'mfa_web_authn_verify_not_enabled',
      ],
      429: [RATE],
    },
    bearer: true,
    rateLimited: true,
  },
  {
    method: 'DELETE',
    path: '/factors/{factor_id}',
    kind: 'typed',
    tag: 'MFA',
    group: 'mfa',
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
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/user/identities/authorize',
    kind: 'relay',
    tag: 'Auth',
    group: 'identities',
    summary: 'Link an external identity',
    description:
      'Starts an external OAuth sign-in whose identity is linked to the signed-in user (Supabase Auth needs manual linking enabled, else 404 `manual_linking_disabled`). Redirects to the provider, or answers `{url}` with `skip_http_redirect=true`, as supabase-js asks. Relayed byte for byte.',
    query: Type.Object({
      provider: str('External provider, e.g. `github`', 'github'),
      redirect_to: Type.Optional(redirectTo),
      scopes: Type.Optional(str('Extra provider scopes', 'repo gist')),
      skip_http_redirect: Type.Optional(str('`true`: answer `{url}` with 200 instead of a 302', 'true')),
      code_challenge: Type.Optional(str('PKCE challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')),
      code_challenge_method: Type.Optional(str('PKCE method', 's256')),
    }),
    responses: {
      200: { description: 'The provider URL (`skip_http_redirect=true`)', schema: UrlResponse },
      302: redirect('To the provider'),
    },
    errors: { 404: ['manual_linking_disabled'] },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'DELETE',
    path: '/user/identities/{identity_id}',
    kind: 'typed',
    tag: 'Auth',
    group: 'identities',
    summary: 'Unlink an identity',
    description:
      "Removes one of the signed-in user's identities; the last one cannot be removed. Needs manual linking enabled on Supabase Auth. The body is not read.",
    params: Type.Object({
      identity_id: pathSegment('Identity id (`identity_id` of the identity)', '8f2c9a52-3c1e-4b7a-9a0e-2f6d1c3b5e71', {
        format: 'uuid',
      }),
    }),
    responses: ok('Unlinked (`{}`)', Type.Object({}, { title: 'EmptyObject', description: 'An empty object' })),
    errors: {
      403: ['unexpected_audience'],
      404: ['manual_linking_disabled', 'validation_failed'],
      422: ['identity_not_found', 'single_identity_not_deletable', 'email_conflict_identity_not_deletable'],
    },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/sso',
    kind: 'typed',
    tag: 'SSO',
    group: 'sso',
    summary: 'Start a SAML single sign-on',
    description:
      'Finds the SAML identity provider by id or e-mail domain and redirects to it (303), or answers `{url}` with `skip_http_redirect: true`, as supabase-js asks. 404 `saml_provider_disabled` when SAML is off on Supabase Auth.',
    body: SSORequest,
    responses: {
      200: { description: 'The identity provider URL (`skip_http_redirect: true`)', schema: UrlResponse },
      303: redirect('To the identity provider'),
    },
    errors: { 400: ['captcha_failed'], 404: [SAML_OFF, 'sso_provider_not_found'], 429: [RATE] },
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/sso/saml/metadata',
    kind: 'relay',
    tag: 'SSO',
    group: 'sso',
    summary: 'SAML service provider metadata',
    description:
      "Supabase Auth's SAML 2.0 service provider metadata (XML) for identity providers. Relayed byte for byte.",
    query: Type.Object({
      download: Type.Optional(str('`true`: served as a download, valid for five years', 'true')),
    }),
    responses: ok('SAML metadata (`application/xml`)'),
    errors: { 404: [SAML_OFF] },
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/sso/saml/acs',
    kind: 'relay',
    tag: 'SSO',
    group: 'sso',
    summary: 'SAML assertion consumer service',
    description:
      'Where the identity provider posts the SAML response (a form). The body is forwarded as is; Supabase Auth redirects to the application.',
    responses: {
      302: redirect('To the application, with the session'),
      303: redirect('To the application with an error'),
    },
    errors: {
      400: ['saml_assertion_no_email', 'saml_assertion_no_user_id', 'flow_state_already_used'],
      404: [SAML_OFF, 'saml_idp_not_found', 'saml_relay_state_not_found'],
      422: ['saml_relay_state_expired'],
      429: [RATE],
    },
    bearer: false,
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/oauth/authorizations/{authorization_id}',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: 'Authorization request details (consent page)',
    description:
      'What the consent page shows: the client, the user and the requested scopes, for the signed-in user. When an earlier consent covers the scopes, the request is approved at once and the answer is `{redirect_url}`. An `Origin` header, when sent, must pass the redirect allow list of Supabase Auth.',
    params: oauth.AuthorizationIdParams,
    responses: ok('Details, or the redirect when already consented', oauth.AuthorizationDetailsResponse),
    errors: { 403: ['bad_jwt'], 404: ['oauth_authorization_not_found', OAUTH_OFF] },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'POST',
    path: '/oauth/authorizations/{authorization_id}/consent',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: "Record the user's consent",
    description:
      "Approves or denies the authorization request for the signed-in user. The answer names the client's redirect URI with a `code` (approve) or `error=access_denied` (deny).",
    body: oauth.ConsentRequest,
    params: oauth.AuthorizationIdParams,
    responses: ok('Where to send the browser', oauth.ConsentRedirect),
    errors: { 403: ['bad_jwt'], 404: ['oauth_authorization_not_found', OAUTH_OFF] },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'GET',
    path: '/user/oauth/grants',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: "List the user's OAuth grants",
    description: 'The clients the signed-in user has authorised, with the scopes granted.',
    responses: ok('Active grants', oauth.OAuthGrantList),
    errors: { 404: [OAUTH_OFF] },
    bearer: true,
    rateLimited: false,
  },
  {
    method: 'DELETE',
    path: '/user/oauth/grants',
    kind: 'typed',
    tag: 'OAuth',
    group: 'oauth',
    summary: 'Revoke an OAuth grant',
    description:
      "Revokes the signed-in user's consent for the client named by `client_id`, and the client's sessions for the user. The body is not read.",
    query: Type.Object({ client_id: uuid('Client whose grant to revoke', '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60') }),
    responses: noContent('Revoked'),
    errors: { 404: ['oauth_client_not_found', 'oauth_consent_not_found', OAUTH_OFF] },
    bearer: true,
    rateLimited: false,
  },
]

/**
 * The route table as mounted and documented: every optional property of a request body also takes
 * `null`, which Supabase Auth reads as absent (src/auth/types/nullable.ts).
 */
export const AUTH_ROUTES: readonly AuthRoute[] = TABLE.map((route) =>
  route.body ? { ...route, body: nullableOptionals(route.body) } : route,
)

/** `METHOD /template` names used by configuration (e.g. AUTHGATE_RATE_LIMITED_ROUTES). */
export const routeName = (r: Pick<AuthRoute, 'method' | 'path'>) => `${r.method} ${r.path}`
export const DEFAULT_RATE_LIMITED = AUTH_ROUTES.filter((r) => r.rateLimited).map(routeName)

/** The routes that are mounted when the given groups are turned off. */
export function enabledRoutes(disabledGroups: readonly RouteGroup[] = []): AuthRoute[] {
  return AUTH_ROUTES.filter((r) => !disabledGroups.includes(r.group))
}
