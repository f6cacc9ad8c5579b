import { Type } from 'typebox'
import { bool, int, obj, opt, pathSegment, str, strArray, timestamp, uuid } from './common.ts'

// OAuth 2.1 server of Supabase Auth: discovery, keys, token, registration, userinfo, consent.

const base = 'https://api.example.com/auth'

export const OAuthServerMetadata = Type.Object(
  {
    issuer: str('Issuer (`GOTRUE_JWT_ISSUER`)', base),
    authorization_endpoint: str('Authorization endpoint', `${base}/oauth/authorize`, { format: 'uri' }),
    token_endpoint: str('Token endpoint', `${base}/oauth/token`, { format: 'uri' }),
    jwks_uri: str('JWKS document', `${base}/.well-known/jwks.json`, { format: 'uri' }),
    userinfo_endpoint: opt(str('UserInfo endpoint', `${base}/oauth/userinfo`, { format: 'uri' })),
    registration_endpoint: opt(
      str('Dynamic client registration (only when enabled)', `${base}/oauth/clients/register`, { format: 'uri' }),
    ),
    scopes_supported: strArray('Scopes', ['openid', 'profile', 'email', 'phone', 'offline_access']),
    response_types_supported: strArray('Response types', ['code']),
    response_modes_supported: opt(strArray('Response modes', ['query'])),
    grant_types_supported: strArray('Grant types', ['authorization_code', 'refresh_token']),
    subject_types_supported: opt(strArray('Subject types', ['public'])),
    id_token_signing_alg_values_supported: opt(strArray('ID token algorithms', ['RS256', 'HS256', 'ES256'])),
    token_endpoint_auth_methods_supported: strArray('Client authentication methods', [
      'client_secret_basic',
      'client_secret_post',
      'none',
    ]),
    claims_supported: opt(strArray('Claims', ['sub', 'aud', 'iss', 'exp', 'iat', 'email'])),
    code_challenge_methods_supported: strArray('PKCE methods', ['S256', 'plain']),
    authorization_response_iss_parameter_supported: opt(
      bool('RFC 9207: authorization responses carry `iss` (added by authgate)', true),
    ),
  },
  {
    title: 'OAuthServerMetadata',
    description: 'RFC 8414 authorization server metadata (same body as OpenID discovery)',
  },
)

const Jwk = Type.Object(
  {
    kty: str('Key type', 'EC'),
    kid: opt(str('Key id', 'key-1')),
    alg: opt(str('Algorithm', 'ES256')),
    use: opt(str('Always `sig`', 'sig')),
    key_ops: opt(strArray('Always `["verify"]`', ['verify'])),
    crv: opt(str('Curve (EC keys)', 'P-256')),
    x: opt(str('EC x coordinate', 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU')),
    y: opt(str('EC y coordinate', 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0')),
    n: opt(
      str(
        'RSA modulus',
        '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
      ),
    ),
    e: opt(str('RSA exponent', 'AQAB')),
  },
  { title: 'JWK', description: 'A public signing key' },
)

export const JWKSResponse = Type.Object(
  {
    keys: Type.Array(Jwk, { description: 'Asymmetric public keys (empty with only an HS256 secret)', examples: [[]] }),
  },
  { title: 'JWKSResponse', description: 'JSON Web Key Set for verifying access and ID tokens' },
)

export const OAuthTokenRequest = Type.Object(
  {
    // Required, and one of the grants Supabase Auth's OAuth server has (it refuses the rest).
    grant_type: str('`authorization_code` or `refresh_token`', 'authorization_code', {
      enum: ['authorization_code', 'refresh_token'],
    }),
    code: opt(str('Authorization code (grant `authorization_code`)', 'a1b2c3d4e5f6')),
    redirect_uri: opt(str('Must equal the one used at /oauth/authorize', 'http://localhost:3000/callback')),
    code_verifier: opt(str('PKCE verifier', 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')),
    refresh_token: opt(str('Refresh token (grant `refresh_token`)', 'x3k9v2m7q1pz')),
    client_id: opt(str('Client id (client_secret_post or public clients)', '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60')),
    client_secret: opt(str('Client secret (client_secret_post)', 'sb_secret_3kq9')),
    resource: opt(str('RFC 8707 resource indicator (JSON bodies only)', 'https://api.example.com')),
  },
  {
    title: 'OAuthTokenRequest',
    description:
      'Token request, as JSON or `application/x-www-form-urlencoded`; client credentials may instead be sent with HTTP Basic',
  },
)

export const OAuthTokenResponse = Type.Object(
  {
    access_token: str('Access token (JWT)', 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln'),
    token_type: str('Always `bearer`', 'bearer'),
    expires_in: int('Lifetime in seconds', 3600),
    refresh_token: str('Refresh token', 'x3k9v2m7q1pz'),
    id_token: opt(str('OIDC ID token (scope `openid`)', 'eyJhbGciOiJFUzI1NiJ9.eyJub25jZSI6Im4ifQ.c2ln')),
  },
  { title: 'OAuthTokenResponse', description: 'OAuth 2.1 token response' },
)

export const ClientRegistrationRequest = Type.Object(
  {
    redirect_uris: Type.Array(Type.String({ maxLength: 2048 }), {
      minItems: 1,
      maxItems: 10,
      description: 'Redirect URIs (absolute; `http` only for loopback hosts)',
      examples: [['http://localhost:3000/callback']],
    }),
    client_type: opt(str('`public` or `confidential`', 'confidential', { enum: ['public', 'confidential'] })),
    token_endpoint_auth_method: opt(
      str('Client authentication at the token endpoint', 'client_secret_basic', {
        enum: ['none', 'client_secret_basic', 'client_secret_post'],
      }),
    ),
    grant_types: opt(
      Type.Array(Type.String({ enum: ['authorization_code', 'refresh_token'] }), {
        description: 'Grant types (default both)',
        examples: [['authorization_code', 'refresh_token']],
      }),
    ),
    client_name: opt(str('Display name', 'My App', { maxLength: 1024 })),
    client_uri: opt(str('Home page', 'https://app.example.com', { format: 'uri', maxLength: 2048 })),
    logo_uri: opt(str('Logo', 'https://app.example.com/logo.png', { format: 'uri', maxLength: 2048 })),
  },
  {
    title: 'ClientRegistrationRequest',
    description: 'RFC 7591 dynamic client registration (the subset Supabase Auth reads)',
  },
)

export const ClientRegistrationResponse = Type.Object(
  {
    client_id: uuid('Client id', '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60'),
    client_secret: opt(str('Client secret (confidential clients; shown only here)', 'sb_secret_3kq9')),
    client_secret_expires_at: opt(
      int(
        'With a `client_secret`: when it expires, `0` for never (RFC 7591 §3.2.1; added by authgate, Supabase Auth leaves it out)',
        0,
      ),
    ),
    client_type: str('`public` or `confidential`', 'confidential'),
    redirect_uris: strArray('Registered redirect URIs', ['http://localhost:3000/callback']),
    token_endpoint_auth_method: str('Client authentication method', 'client_secret_basic'),
    grant_types: strArray('Grant types', ['authorization_code', 'refresh_token']),
    response_types: strArray('Always `["code"]`', ['code']),
    client_name: opt(str('Display name', 'My App')),
    client_uri: opt(str('Home page', 'https://app.example.com')),
    logo_uri: opt(str('Logo', 'https://app.example.com/logo.png')),
    registration_type: str('Always `dynamic` here', 'dynamic'),
    created_at: timestamp('Creation time'),
    updated_at: timestamp('Last update'),
  },
  { title: 'ClientRegistrationResponse', description: 'The registered client' },
)

export const OAuthUserInfo = Type.Object(
  {
    sub: uuid('User id'),
    email: opt(str('E-mail (scope `email`)', 'user@example.com')),
    email_verified: opt(bool('E-mail confirmed (scope `email`)', true)),
    name: opt(str('Name (scope `profile`)', 'Ada Lovelace')),
    picture: opt(str('Avatar URL (scope `profile`)', 'https://example.com/ada.png')),
    preferred_username: opt(str('Username (scope `profile`)', 'ada')),
    updated_at: opt(int('Last update, Unix seconds (scope `profile`)', 1795000000)),
    user_metadata: opt(obj('User metadata (scope `profile`)', { name: 'Ada Lovelace' })),
    phone: opt(str('Phone (scope `phone`)', '15551234567')),
    phone_verified: opt(bool('Phone confirmed (scope `phone`)', true)),
  },
  { title: 'OAuthUserInfo', description: 'OIDC UserInfo; the claims depend on the scopes granted to the session' },
)

// Consent page helpers and the user's grants (supabase-js `auth.oauth.*`): bearer token of the user.

const ClientDetails = Type.Object(
  {
    // A client registered for a client ID metadata document is named by the document's URL (D98).
    id: Type.Union(
      [
        uuid('Client id', '0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60'),
        str('The URL of the client ID metadata document the client is known by', 'https://app.example.com/mcp.json', {
          format: 'uri',
          pattern: '^https://',
        }),
      ],
      {
        description: 'Client id: the UUID, or the client ID metadata document URL the client is known by',
        examples: ['0b6c2f7e-9c5d-4a61-8e7f-1d2c3b4a5f60'],
      },
    ),
    name: opt(str('Display name', 'My App')),
    uri: opt(str('Home page', 'https://app.example.com')),
    logo_uri: opt(str('Logo', 'https://app.example.com/logo.png')),
  },
  { title: 'OAuthClientDetails', description: 'The client as shown to the user' },
)

export const ConsentRedirect = Type.Object(
  {
    redirect_url: str(
      "Where to send the browser: the client's redirect URI with `code` and `state`, or with `error=access_denied`",
      'http://localhost:3000/callback?code=a1b2c3d4e5f6&state=af0ifjsldkj',
    ),
  },
  { title: 'OAuthConsentRedirect', description: 'The outcome of the authorization request' },
)

export const AuthorizationDetails = Type.Object(
  {
    authorization_id: str('The authorization request', 'ppb3djtqzpsdmxbi7lhkgusc4cpj35ur'),
    redirect_uri: opt(str('Redirect URI of the request', 'http://localhost:3000/callback')),
    client: ClientDetails,
    user: Type.Object(
      {
        id: opt(uuid('User id')),
        email: opt(str('E-mail', 'user@example.com')),
      },
      { description: 'The signed-in user' },
    ),
    scope: opt(str('Requested scopes, space-separated', 'openid email')),
  },
  { title: 'OAuthAuthorizationDetails', description: 'What the consent page shows the user' },
)

export const AuthorizationDetailsResponse = Type.Union([AuthorizationDetails, ConsentRedirect], {
  title: 'OAuthAuthorizationDetailsResponse',
  description:
    'The request to show on the consent page, or `{redirect_url}` when an earlier consent already covers the scopes',
})

export const ConsentRequest = Type.Object(
  { action: str('`approve` or `deny`', 'approve', { enum: ['approve', 'deny'] }) },
  { title: 'OAuthConsentRequest', description: "The user's decision" },
)

export const AuthorizationIdParams = Type.Object({
  authorization_id: pathSegment(
    'Authorization request id from the consent page URL',
    'ppb3djtqzpsdmxbi7lhkgusc4cpj35ur',
  ),
})

export const OAuthGrantList = Type.Array(
  Type.Object(
    {
      client: ClientDetails,
      scopes: strArray('Granted scopes', ['openid', 'email']),
      granted_at: timestamp('When the consent was given'),
    },
    { title: 'OAuthGrant', description: 'A client the user has authorised' },
  ),
  { title: 'OAuthGrantList', description: "The user's active grants" },
)
