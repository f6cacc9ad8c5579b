import { Type, type TSchema } from 'typebox'
import { str } from './types/common.ts'
import * as oauth from './types/oauth.ts'
import * as pk from './types/passkeys.ts'
import * as req from './types/requests.ts'
import { HealthResponse, SettingsResponse } from './types/server.ts'
import { MessageResponse, SessionResponse, SignupResponse, UserObject, VerifyMessageResponse } from './types/user.ts'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type AuthTag = 'Auth' | 'OAuth' | 'Passkey'

export interface ResponseDoc {
  description: string
  schema?: TSchema
  headers?: Record<string, { description: string; schema: Record<string, unknown> }>
}

/**
 * One mounted route. Mounting (src/auth/mount.ts), rate limiting and the OpenAPI document all read
 * this table and nothing else lists routes.
 */
export interface AuthRoute {
  method: HttpMethod
  /** Path template relative to the prefix; `{id}` marks the guarded passkey segment. */
  path: string
  /** typed: validated JSON, original bytes forwarded. relay: no validation, everything byte for byte. */
  kind: 'typed' | 'relay'
  tag: AuthTag
  summary: string
  description?: string
  /** Request body type. Absent: the backend reads no body and any body is forwarded untouched. */
  body?: TSchema
  /** The backend does not read the body (backend-contract §1.0): an empty one is accepted. */
  bodyOptional?: boolean
  /** Query parameters, documented only: the raw query string is always forwarded and the backend checks it. */
  query?: TSchema
  params?: TSchema
  /** Success responses by status (NOTES.md decision 4: the backend's real statuses). */
  responses: Record<number, ResponseDoc>
  /** The backend requires a user's bearer token (documentation; the gateway itself authenticates nothing). */
  bearer: boolean
  /** Limited by default (SEED.md §8.1); operators may change the set. */
  rateLimited: boolean
  /** Accepts `application/x-www-form-urlencoded` besides JSON (OAuth clients send forms). */
  form?: boolean
  /** Where the request goes when it differs from method + path (NOTES.md decision 1). */
  backend?: { method?: HttpMethod; path?: string }
}

const redirectTo = str('Where to send the user afterwards (must pass the backend allow list)', 'http://localhost:3000/welcome')
const redirectQuery = Type.Object({ redirect_to: Type.Optional(redirectTo) })
const location = { Location: { description: 'Redirect target', schema: { type: 'string', format: 'uri' } } }
const ok = (description: string, schema?: TSchema): Record<number, ResponseDoc> => ({ 200: schema ? { description, schema } : { description } })
const noContent = (description: string): Record<number, ResponseDoc> => ({ 204: { description } })
const redirect = (status: 302 | 303, description: string): ResponseDoc => ({ description, headers: location })

export const AUTH_ROUTES: readonly AuthRoute[] = [
  // SEED.md §4.1: typed JSON endpoints
  { method: 'GET', path: '/health', kind: 'typed', tag: 'Auth', summary: 'Backend health', description: 'Answers when Supabase Auth is running; it does not check the database. Use it for liveness probes of the backend behind authgate.', responses: ok('Supabase Auth is up', HealthResponse), bearer: false, rateLimited: false },
  { method: 'GET', path: '/settings', kind: 'typed', tag: 'Auth', summary: 'Public auth settings', description: 'Which sign-in methods are enabled, whether sign-ups are allowed or confirmed automatically, and whether passkeys are on. Public.', responses: ok('Enabled providers and sign-up settings', SettingsResponse), bearer: false, rateLimited: false },
  {
    method: 'POST', path: '/signup', kind: 'typed', tag: 'Auth', summary: 'Sign up with e-mail or phone and password',
    description: 'Returns a session when the user is confirmed automatically, otherwise the user awaiting confirmation. Without e-mail and phone this is an anonymous sign-in.',
    body: req.SignupRequest, query: redirectQuery, responses: ok('Session, or the unconfirmed user', SignupResponse), bearer: false, rateLimited: true,
  },
  {
    method: 'POST', path: '/token', kind: 'typed', tag: 'Auth', summary: 'Sign in or refresh a session',
    description: 'The grant is chosen by the `grant_type` query parameter: `password`, `refresh_token`, `pkce` or `id_token`.',
    body: req.TokenRequest,
    query: Type.Object({
      grant_type: Type.Optional(str('Grant: `password`, `refresh_token`, `pkce` or `id_token`', 'password')),
      redirect_to: Type.Optional(redirectTo),
    }),
    responses: ok('New session', SessionResponse), bearer: false, rateLimited: true,
  },
  { method: 'POST', path: '/otp', kind: 'typed', tag: 'Auth', summary: 'Send a one-time code or magic link', description: 'Sends a magic link or a one-time code by e-mail, or a code by SMS/WhatsApp. Creates the user unless `create_user` is `false`. Exchange the code at `POST /verify`.', body: req.OTPRequest, query: redirectQuery, responses: ok('Sent (`message_id` for SMS)', MessageResponse), bearer: false, rateLimited: true },
  {
    method: 'POST', path: '/verify', kind: 'typed', tag: 'Auth', summary: 'Verify a one-time code', description: 'Exchanges a one-time code (with `email` or `phone`) or an e-mail link\'s `token_hash` for a session.',
    body: req.VerifyRequest, query: redirectQuery,
    responses: ok('Session (or a message for the first half of a secure e-mail change)', Type.Union([SessionResponse, VerifyMessageResponse])),
    bearer: false, rateLimited: false,
  },
  { method: 'POST', path: '/recover', kind: 'typed', tag: 'Auth', summary: 'Send a password recovery e-mail', description: 'Sends a password recovery link to the address. Answers 200 also for unknown addresses, so it cannot be used to find accounts.', body: req.RecoverRequest, query: redirectQuery, responses: ok('Sent (also for unknown addresses)', MessageResponse), bearer: false, rateLimited: true },
  { method: 'POST', path: '/resend', kind: 'typed', tag: 'Auth', summary: 'Resend a confirmation message', description: 'Resends the sign-up confirmation or the e-mail/phone change message.', body: req.ResendRequest, query: redirectQuery, responses: ok('Sent', MessageResponse), bearer: false, rateLimited: true },
  {
    method: 'POST', path: '/logout', kind: 'typed', tag: 'Auth', summary: 'Sign out', description: 'Revokes the refresh tokens of the session (`scope=local`), of every session of the user (`global`, the default) or of the others (`others`). The access token stays valid until it expires.',
    query: Type.Object({ scope: Type.Optional(str('`global` (default), `local` or `others`', 'global')) }),
    responses: noContent('Signed out'), bearer: true, rateLimited: false,
  },
  { method: 'GET', path: '/user', kind: 'typed', tag: 'Auth', summary: 'Get the signed-in user', description: 'The user the bearer token belongs to.', responses: ok('The user', UserObject), bearer: true, rateLimited: false },
  { method: 'PUT', path: '/user', kind: 'typed', tag: 'Auth', summary: 'Update the signed-in user', description: 'Changes e-mail, phone, password or `user_metadata` (`data`). An e-mail or phone change is confirmed by a message to the new address.', body: req.UpdateUserRequest, query: redirectQuery, responses: ok('The updated user', UserObject), bearer: true, rateLimited: false },
  { method: 'GET', path: '/reauthenticate', kind: 'typed', tag: 'Auth', summary: 'Send a reauthentication code', description: 'Sends a one-time code to the user\'s e-mail or phone, to be given as `nonce` to `PUT /user` when a password change requires reauthentication.', responses: ok('Sent', MessageResponse), bearer: true, rateLimited: false },
  {
    method: 'POST', path: '/reauthenticate', kind: 'typed', tag: 'Auth', summary: 'Send a reauthentication code (POST form)', bodyOptional: true,
    description: 'Supabase Auth only serves `GET /reauthenticate`; this route reaches it as a GET, without the body.',
    body: req.ReauthenticateRequest, responses: ok('Sent', MessageResponse), bearer: true, rateLimited: false,
    backend: { method: 'GET' },
  },

  // SEED.md §4.2: redirect endpoints, relayed byte for byte
  {
    method: 'GET', path: '/authorize', kind: 'relay', tag: 'Auth', summary: 'Start an external OAuth sign-in',
    description: 'Redirects the browser to the provider. All query parameters reach Supabase Auth unchanged.',
    query: Type.Object({
      provider: str('External provider, e.g. `github`', 'github'),
      redirect_to: Type.Optional(redirectTo),
      scopes: Type.Optional(str('Extra provider scopes', 'repo gist')),
      code_challenge: Type.Optional(str('PKCE challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')),
      code_challenge_method: Type.Optional(str('PKCE method', 's256')),
    }),
    responses: { 302: redirect(302, 'To the provider') }, bearer: false, rateLimited: false,
  },
  { method: 'GET', path: '/callback', kind: 'relay', tag: 'Auth', summary: 'External provider callback', description: 'Where the external provider sends the browser back. Supabase Auth finishes the sign-in and redirects to the application with tokens in the fragment or a `code` for PKCE.', responses: { 302: redirect(302, 'To the application'), 303: redirect(303, 'To the site URL with an error (bad state)') }, bearer: false, rateLimited: false },
  { method: 'POST', path: '/callback', kind: 'relay', tag: 'Auth', summary: 'External provider callback (form_post)', description: 'Used by providers that post the result as a form (Apple). The form body is forwarded as is.', responses: { 302: redirect(302, 'To the application'), 303: redirect(303, 'To the site URL with an error (bad state)') }, bearer: false, rateLimited: false },
  {
    method: 'GET', path: '/verify', kind: 'relay', tag: 'Auth', summary: 'Follow an e-mail link',
    description: 'The link in confirmation, magic-link, invite, recovery and e-mail change messages. Redirects to `redirect_to` with tokens in the fragment, or `?code=` for PKCE. Relayed byte for byte.',
    query: Type.Object({
      token: str('Hashed token from the e-mail', 'pkce_5d41402abc4b2a76b9719d911017c592'),
      type: str('Kind of link', 'signup'),
      redirect_to: Type.Optional(redirectTo),
    }),
    responses: { 303: redirect(303, 'To the application, tokens in the fragment or `?code=`') }, bearer: false, rateLimited: false,
  },

  // SEED.md §4.3: OAuth 2.1 server
  { method: 'GET', path: '/.well-known/oauth-authorization-server', kind: 'typed', tag: 'OAuth', summary: 'Authorization server metadata', description: 'RFC 8414 metadata of the OAuth 2.1 server: endpoints, scopes, grant types and PKCE methods. 404 when the OAuth server is off.', responses: ok('RFC 8414 metadata', oauth.OAuthServerMetadata), bearer: false, rateLimited: false },
  { method: 'GET', path: '/.well-known/openid-configuration', kind: 'typed', tag: 'OAuth', summary: 'OpenID Connect discovery', description: 'OpenID Connect discovery document (the same body as the RFC 8414 metadata).', responses: ok('Discovery document', oauth.OAuthServerMetadata), bearer: false, rateLimited: false },
  { method: 'GET', path: '/.well-known/jwks.json', kind: 'typed', tag: 'OAuth', summary: 'Signing keys', description: 'Public keys that sign access and ID tokens. Empty when Supabase Auth signs with a shared secret only.', responses: ok('JSON Web Key Set', oauth.JWKSResponse), bearer: false, rateLimited: false },
  {
    method: 'GET', path: '/oauth/authorize', kind: 'relay', tag: 'OAuth', summary: 'OAuth 2.1 authorization', description: 'Starts an authorization-code flow with PKCE for a registered client: redirects to the consent page of the site, or back to `redirect_uri` with an error.',
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
    responses: { 302: redirect(302, 'To the consent page, or to `redirect_uri` with an error') }, bearer: false, rateLimited: false,
  },
  {
    method: 'POST', path: '/oauth/token', kind: 'typed', tag: 'OAuth', summary: 'OAuth 2.1 token endpoint',
    description: 'JSON or form-encoded. Clients authenticate with HTTP Basic (`client_secret_basic`), body credentials (`client_secret_post`) or `client_id` alone (public clients).',
    body: oauth.OAuthTokenRequest, form: true, responses: ok('Tokens', oauth.OAuthTokenResponse), bearer: false, rateLimited: true,
  },
  { method: 'POST', path: '/oauth/clients/register', kind: 'typed', tag: 'OAuth', summary: 'Register an OAuth client', description: 'RFC 7591 dynamic client registration, when the backend allows it (`GOTRUE_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION`). Rate limited by authgate.', body: oauth.ClientRegistrationRequest, responses: { 201: { description: 'Registered', schema: oauth.ClientRegistrationResponse } }, bearer: false, rateLimited: true },
  { method: 'GET', path: '/oauth/userinfo', kind: 'typed', tag: 'OAuth', summary: 'OpenID Connect UserInfo', description: 'OpenID Connect UserInfo for the bearer token; the claims depend on the scopes the user granted.', responses: ok('Claims for the granted scopes', oauth.OAuthUserInfo), bearer: true, rateLimited: false },

  // SEED.md §4.4: passkeys
  { method: 'GET', path: '/passkeys', kind: 'typed', tag: 'Passkey', summary: "List the user's passkeys", description: 'The passkeys registered by the signed-in user.', responses: ok('Passkeys', pk.PasskeyListResponse), bearer: true, rateLimited: false },
  { method: 'POST', path: '/passkeys/registration/options', kind: 'typed', tag: 'Passkey', summary: 'Start a passkey registration', bodyOptional: true, description: 'Creation options for `navigator.credentials.create()`. The WebAuthn relying party is the origin users see, so `GOTRUE_WEBAUTHN_RP_ORIGINS` must include authgate\'s public origin.', body: pk.PasskeyRegistrationOptionsRequest, responses: ok('Creation options', pk.PasskeyRegistrationOptionsResponse), bearer: true, rateLimited: false },
  { method: 'POST', path: '/passkeys/registration/verify', kind: 'typed', tag: 'Passkey', summary: 'Finish a passkey registration', description: 'Checks the new credential against the challenge and stores the passkey.', body: pk.PasskeyRegistrationVerifyRequest, responses: ok('The new passkey', pk.PasskeyRegistrationVerifyResponse), bearer: true, rateLimited: false },
  { method: 'POST', path: '/passkeys/authentication/options', kind: 'typed', tag: 'Passkey', summary: 'Start a passkey sign-in', bodyOptional: true, description: 'Request options for `navigator.credentials.get()` with a discoverable credential: no user needs to be named.', body: pk.PasskeyAuthenticationOptionsRequest, responses: ok('Request options', pk.PasskeyAuthenticationOptionsResponse), bearer: false, rateLimited: true },
  { method: 'POST', path: '/passkeys/authentication/verify', kind: 'typed', tag: 'Passkey', summary: 'Finish a passkey sign-in', description: 'Checks the assertion against the challenge and returns a session.', body: pk.PasskeyAuthenticationVerifyRequest, responses: ok('New session', SessionResponse), bearer: false, rateLimited: true },
  { method: 'PATCH', path: '/passkeys/{id}', kind: 'typed', tag: 'Passkey', summary: 'Rename a passkey', description: 'Sets the passkey\'s display name. The id must be a single path segment; anything else is rejected before reaching the backend.', params: pk.PasskeyIdParams, body: pk.PasskeyUpdateRequest, responses: ok('The renamed passkey', pk.PasskeyRegistrationVerifyResponse), bearer: true, rateLimited: false },
  { method: 'DELETE', path: '/passkeys/{id}', kind: 'typed', tag: 'Passkey', summary: 'Delete a passkey', description: 'Removes the passkey. The id must be a single path segment; anything else is rejected before reaching the backend.', params: pk.PasskeyIdParams, responses: noContent('Deleted'), bearer: true, rateLimited: false },
]

/** `METHOD /template` names used by configuration (e.g. AUTHGATE_RATE_LIMITED_ROUTES). */
export const routeName = (r: Pick<AuthRoute, 'method' | 'path'>) => `${r.method} ${r.path}`
export const DEFAULT_RATE_LIMITED = AUTH_ROUTES.filter((r) => r.rateLimited).map(routeName)
