import { Type } from 'typebox'
import { str, uuid } from '../types/common.ts'
import * as oauth from '../types/oauth.ts'
import { withDefaults, type GroupDefaults } from './entry.ts'
import { RATE, noContent, ok, redirect } from './shared.ts'
import { completeClientRegistration } from '../oauth-mends.ts'
import type { AnswerMend } from '../../proxy/relay.ts'
import { ticketOnConsentRedirect } from '../consent-page/ticket.ts'
import {
  advertiseClientMetadata,
  authorizationClientUrl,
  authorizeClientId,
  grantClientUrls,
  revokeGrantClientId,
  tokenClientId,
} from '../client-metadata/translate.ts'
import {
  advertiseIssParameter,
  issOnAuthorizationRedirect,
  issOnConsentRedirect,
  oauthTokenError,
} from '../oauth-conformance.ts'

/** The OAuth 2.1 server is off (`GOTRUE_OAUTH_SERVER_ENABLED`). */
const OAUTH_OFF = 'feature_disabled'

/** Mends run one after the other, each on the answer the one before left. */
const chain =
  (...mends: AnswerMend[]): AnswerMend =>
  async (answer, request) => {
    let out = answer
    for (const mend of mends) out = await mend(out, request)
    return out
  }

/** The metadata as authgate extends it: RFC 9207 `iss` (D81), client ID metadata documents (D98). */
const metadataMend = chain(advertiseIssParameter, advertiseClientMetadata)

const OAUTH: GroupDefaults = { kind: 'typed', tag: 'OAuth', group: 'oauth', bearer: false, rateLimited: false }

/**
 * The OAuth 2.1 / OpenID Connect server: discovery, authorization, tokens, registration, userinfo.
 * The signing keys sit among them in the document but belong to `core` (a per-route override):
 * applications verify access tokens with them whether or not the OAuth server is on.
 */
export const oauthServerRoutes = withDefaults(OAUTH, [
  {
    method: 'GET',
    path: '/.well-known/oauth-authorization-server',
    summary: 'Authorization server metadata',
    description:
      'RFC 8414 metadata of the OAuth 2.1 server: endpoints, scopes, grant types and PKCE methods. 404 when the OAuth server is off. Also served at `/.well-known/oauth-authorization-server<prefix>` (RFC 8414 §3.1 path insertion).',
    responses: ok('RFC 8414 metadata', oauth.OAuthServerMetadata),
    errors: { 404: [OAUTH_OFF] },
    cacheable: true,
    rootAlias: true,
    // RFC 9207: authgate adds `iss` to authorization responses (docs/decisions.md, D81); with
    // client ID metadata documents on, it says so (D98).
    mend: metadataMend,
  },
  {
    method: 'GET',
    path: '/.well-known/openid-configuration',
    summary: 'OpenID Connect discovery',
    description:
      'OpenID Connect discovery document (the same body as the RFC 8414 metadata). Also served at `/.well-known/openid-configuration<prefix>` for clients that insert the well-known segment before the path.',
    responses: ok('Discovery document', oauth.OAuthServerMetadata),
    errors: {},
    cacheable: true,
    rootAlias: true,
    mend: metadataMend,
  },
  {
    method: 'GET',
    path: '/.well-known/jwks.json',
    group: 'core',
    summary: 'Signing keys',
    description:
      'Public keys that sign access and ID tokens. Empty when Supabase Auth signs with a shared secret only.',
    responses: ok('JSON Web Key Set', oauth.JWKSResponse),
    errors: {},
    cacheable: true,
  },
  {
    method: 'GET',
    path: '/oauth/authorize',
    kind: 'relay',
    summary: 'OAuth 2.1 authorization',
    description:
      'Starts an authorization-code flow with PKCE for a registered client: redirects to the consent page of the site, or back to `redirect_uri` with an error.',
    query: Type.Object({
      // Supabase Auth answers an empty one with 400 ("client_id is required", "redirect_uri is
      // required"); every later problem goes back to the redirect URI (302).
      client_id: str(
        'Registered client id, or (with AUTHGATE_OAUTH_CLIENT_METADATA) the https URL of a client ID metadata document',
        '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60',
        { minLength: 1 },
      ),
      redirect_uri: str('A registered redirect URI', 'http://localhost:3000/callback', { minLength: 1 }),
      response_type: Type.Optional(str('Only `code`', 'code')),
      scope: Type.Optional(str('Space-separated scopes', 'openid email')),
      state: Type.Optional(str('Opaque value echoed back', 'af0ifjsldkj')),
      code_challenge: str('PKCE challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'),
      code_challenge_method: str('`S256` or `plain`', 'S256'),
      nonce: Type.Optional(str('Copied into the ID token', 'n-0S6_WzA2Mj')),
    }),
    responses: {
      302: redirect('To the consent page, or to `redirect_uri` with `code` or `error` and `iss` (RFC 9207)'),
    },
    errors: { 400: ['validation_failed', 'oauth_client_not_found'], 404: [OAUTH_OFF], 429: [RATE] },
    // A client ID metadata document's URL becomes the backend client's UUID (D98).
    prepare: authorizeClientId,
    // RFC 9207's `iss` on a redirect back to the client; the consent page's ticket on one to the page.
    mend: async (answer, request) =>
      ticketOnConsentRedirect(await issOnAuthorizationRedirect(answer, request), request),
  },
  {
    method: 'POST',
    path: '/oauth/token',
    summary: 'OAuth 2.1 token endpoint',
    description:
      'JSON or form-encoded. Clients authenticate with HTTP Basic (`client_secret_basic`), body credentials (`client_secret_post`) or `client_id` alone (public clients). Every refusal has the RFC 6749 §5.2 shape `{error, error_description}`: a spent, revoked or unknown refresh token or code is `invalid_grant`, failed client authentication `invalid_client` (401 with `WWW-Authenticate: Basic` when the credentials came in the `Authorization` header).',
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
      401: ['invalid_client'],
      404: [OAUTH_OFF],
    },
    rateLimited: true,
    // RFC 6749 §5.2 for the refusals Supabase Auth answers in its own shape (docs/decisions.md, D82).
    mend: oauthTokenError,
    prepare: tokenClientId,
  },
  {
    method: 'POST',
    path: '/oauth/clients/register',
    summary: 'Register an OAuth client',
    description:
      'RFC 7591 dynamic client registration, when the backend allows it (`GOTRUE_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION`). Rate limited by authgate.',
    // Supabase Auth checks each of these only when it is not empty.
    emptyIsAbsent: ['client_type', 'token_endpoint_auth_method', 'client_uri', 'logo_uri'],
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
    // RFC 7591 §3.2.1: the expiry of an issued secret, which Supabase Auth leaves out.
    mend: completeClientRegistration,
    errors: {
      400: ['validation_failed'],
      403: ['oauth_dynamic_client_registration_disabled'],
      404: [OAUTH_OFF],
      429: [RATE],
    },
    rateLimited: true,
  },
  {
    method: 'GET',
    path: '/oauth/userinfo',
    summary: 'OpenID Connect UserInfo',
    description: 'OpenID Connect UserInfo for the bearer token; the claims depend on the scopes the user granted.',
    responses: ok('Claims for the granted scopes', oauth.OAuthUserInfo),
    errors: { 404: [OAUTH_OFF] },
    bearer: true,
  },
])

/** The consent page and grants of the OAuth server, called with the signed-in user's token. */
export const oauthUserRoutes = withDefaults({ ...OAUTH, bearer: true }, [
  {
    method: 'GET',
    path: '/oauth/authorizations/{authorization_id}',
    summary: 'Authorization request details (consent page)',
    description:
      'What the consent page shows: the client, the user and the requested scopes, for the signed-in user. When an earlier consent covers the scopes, the request is approved at once and the answer is `{redirect_url}`. An `Origin` header, when sent, must pass the redirect allow list of Supabase Auth.',
    params: oauth.AuthorizationIdParams,
    responses: ok('Details, or the redirect when already consented', oauth.AuthorizationDetailsResponse),
    errors: { 403: ['bad_jwt'], 404: ['oauth_authorization_not_found', OAUTH_OFF] },
    // Approves (at once, when an earlier consent covers the scopes) a code any client can trade for tokens.
    cookieGuard: 'consent',
    // The client by the URL it knows itself by, when a metadata document registered it (D98).
    mend: chain(issOnConsentRedirect, authorizationClientUrl),
  },
  {
    method: 'POST',
    path: '/oauth/authorizations/{authorization_id}/consent',
    summary: "Record the user's consent",
    description:
      "Approves or denies the authorization request for the signed-in user. The answer names the client's redirect URI with a `code` (approve) or `error=access_denied` (deny).",
    body: oauth.ConsentRequest,
    params: oauth.AuthorizationIdParams,
    responses: ok('Where to send the browser', oauth.ConsentRedirect),
    errors: { 403: ['bad_jwt'], 404: ['oauth_authorization_not_found', OAUTH_OFF] },
    cookieGuard: 'consent',
    mend: issOnConsentRedirect,
  },
  {
    method: 'GET',
    path: '/user/oauth/grants',
    summary: "List the user's OAuth grants",
    description: 'The clients the signed-in user has authorised, with the scopes granted.',
    responses: ok('Active grants', oauth.OAuthGrantList),
    errors: { 404: [OAUTH_OFF] },
    mend: grantClientUrls,
  },
  {
    method: 'DELETE',
    path: '/user/oauth/grants',
    summary: 'Revoke an OAuth grant',
    description:
      "Revokes the signed-in user's consent for the client named by `client_id`, and the client's sessions for the user. The body is not read.",
    query: Type.Object({
      client_id: Type.Union(
        [
          uuid('Client whose grant to revoke', '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60'),
          str('Or the URL of its client ID metadata document', 'https://app.example.com/mcp.json', {
            format: 'uri',
            pattern: '^https://',
          }),
        ],
        { description: 'Client whose grant to revoke', examples: ['0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60'] },
      ),
    }),
    responses: noContent('Revoked'),
    prepare: revokeGrantClientId,
    errors: { 404: ['oauth_client_not_found', 'oauth_consent_not_found', OAUTH_OFF] },
  },
])
