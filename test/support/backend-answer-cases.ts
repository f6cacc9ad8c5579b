/** A request the gateway answers in Supabase Auth's words, and that answer. */
export interface AnswerCase {
  method: string
  /** Relative to the prefix. */
  url: string
  body: string
  status: number
  code: string
  message: string
}

/**
 * One request per rule of src/auth/backend-answers.ts (test/auth/backend-answers.test.ts); the e2e
 * suite sends the same bodies to the real Supabase Auth, directly and through authgate.
 */
export const ANSWER_CASES: AnswerCase[] = [
  // `null` and `""` read as absent where Supabase Auth's handler reads them so.
  {
    method: 'POST',
    url: '/recover',
    body: '{"email":""}',
    status: 400,
    code: 'validation_failed',
    message: 'Password recovery requires an email',
  },
  {
    method: 'POST',
    url: '/recover',
    body: '{"email":null}',
    status: 400,
    code: 'validation_failed',
    message: 'Password recovery requires an email',
  },
  {
    method: 'POST',
    url: '/magiclink',
    body: '{"email":""}',
    status: 422,
    code: 'validation_failed',
    message: 'Password recovery requires an email',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Missing one of these types: signup, email_change, sms, phone_change',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"type":"","email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Missing one of these types: signup, email_change, sms, phone_change',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"phone":null,"type":"sms"}',
    status: 400,
    code: 'validation_failed',
    message: 'Type provided requires a phone number',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"phone":"","type":"sms"}',
    status: 400,
    code: 'validation_failed',
    message: 'Type provided requires a phone number',
  },
  {
    method: 'POST',
    url: '/otp',
    body: '{"email":null}',
    status: 400,
    code: 'validation_failed',
    message: 'One of email or phone must be set',
  },
  {
    method: 'POST',
    url: '/otp',
    body: '{"email":"","phone":""}',
    status: 400,
    code: 'validation_failed',
    message: 'One of email or phone must be set',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"token":null,"type":"email"}',
    status: 400,
    code: 'validation_failed',
    message: 'Verify requires either a token or a token hash',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"token":"","token_hash":"","type":"email"}',
    status: 400,
    code: 'validation_failed',
    message: 'Verify requires either a token or a token hash',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"type":"","token":"123456","email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Verify requires a verification type',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"type":"email","token":"123456","email":"","phone":""}',
    status: 400,
    code: 'validation_failed',
    message: 'Only an email address or phone number should be provided on verify',
  },
  {
    method: 'POST',
    url: '/magiclink',
    body: '{}',
    status: 422,
    code: 'validation_failed',
    message: 'Password recovery requires an email',
  },
  {
    method: 'POST',
    url: '/magiclink',
    body: '{"email":"not-an-email"}',
    status: 400,
    code: 'validation_failed',
    message: 'Unable to validate email address: invalid format',
  },
  {
    method: 'POST',
    url: '/magiclink',
    body: `{"email":"${'a'.repeat(250)}@example.com"}`,
    status: 400,
    code: 'validation_failed',
    message: 'An email address is too long',
  },
  {
    method: 'POST',
    url: '/magiclink',
    body: '{"email":"a@example.com","code_challenge":"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}',
    status: 400,
    code: 'validation_failed',
    message: 'PKCE flow requires code_challenge_method and code_challenge',
  },
  // A query value that makes body fields required (src/auth/query-requirements.ts).
  ...['{"auth_code":"abc"}', '{"code_verifier":"v"}', '{"auth_code":"","code_verifier":"v"}'].map(
    (body): AnswerCase => ({
      method: 'POST',
      url: '/token?grant_type=pkce',
      body,
      status: 400,
      code: 'validation_failed',
      message: 'invalid request: both auth code and code verifier should be non-empty',
    }),
  ),
  {
    method: 'POST',
    url: '/signup',
    body: '{"email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Signup requires a valid password',
  },
  {
    method: 'POST',
    url: '/signup',
    body: '{"email":"a@example.com","password":""}',
    status: 400,
    code: 'validation_failed',
    message: 'Signup requires a valid password',
  },
  {
    method: 'POST',
    url: '/signup',
    body: '{"email":"a@example.com","password":"abc"}',
    status: 422,
    code: 'weak_password',
    message: 'Password should be at least 6 characters.',
  },
  {
    method: 'POST',
    url: '/signup',
    body: '{"phone":"15550000009","password":"abc"}',
    status: 422,
    code: 'weak_password',
    message: 'Password should be at least 6 characters.',
  },
  {
    method: 'POST',
    url: '/signup',
    body: `{"email":"a@example.com","password":"${'a'.repeat(73)}"}`,
    status: 400,
    code: 'validation_failed',
    message: 'Password cannot be longer than 72 characters',
  },
  {
    method: 'POST',
    url: '/signup',
    body: '{"email":"not-an-email","password":"secret123"}',
    status: 400,
    code: 'validation_failed',
    message: 'Unable to validate email address: invalid format',
  },
  {
    method: 'POST',
    url: '/signup',
    body: `{"email":"${'a'.repeat(250)}@example.com","password":"secret123"}`,
    status: 400,
    code: 'validation_failed',
    message: 'An email address is too long',
  },
  {
    method: 'POST',
    url: '/otp',
    body: '{"email":"bad@"}',
    status: 400,
    code: 'validation_failed',
    message: 'Unable to validate email address: invalid format',
  },
  {
    method: 'POST',
    url: '/recover',
    body: '{"email":"a b@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Unable to validate email address: invalid format',
  },
  {
    method: 'POST',
    url: '/recover',
    body: '{}',
    status: 400,
    code: 'validation_failed',
    message: 'Password recovery requires an email',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"type":"signup","email":"@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Unable to validate email address: invalid format',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"type":"magiclink","email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Missing one of these types: signup, email_change, sms, phone_change',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"token":"123456","email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Verify requires a verification type',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"type":"email","token":"123456","email":"nope"}',
    status: 422,
    code: 'validation_failed',
    message: 'Invalid email format',
  },
  {
    method: 'POST',
    url: '/signup',
    body: '{"email":"both@example.com","phone":"15550000009","password":"correct-horse-7"}',
    status: 400,
    code: 'validation_failed',
    message: 'Only an email address or phone number should be provided on signup.',
  },
  {
    method: 'POST',
    url: '/signup',
    body: '{"email":"pkce@example.com","password":"correct-horse-7","code_challenge":"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}',
    status: 400,
    code: 'validation_failed',
    message: 'PKCE flow requires code_challenge_method and code_challenge',
  },
  {
    method: 'POST',
    url: '/otp',
    body: '{"email":"both@example.com","phone":"15550000009"}',
    status: 400,
    code: 'validation_failed',
    message: 'Only an email address or phone number should be provided',
  },
  {
    method: 'POST',
    url: '/otp',
    body: '{"email":"pkce@example.com","code_challenge":"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM","code_challenge_method":null}',
    status: 400,
    code: 'validation_failed',
    message: 'PKCE flow requires code_challenge_method and code_challenge',
  },
  {
    method: 'POST',
    url: '/recover',
    body: '{"email":"pkce@example.com","code_challenge":"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}',
    status: 400,
    code: 'validation_failed',
    message: 'PKCE flow requires code_challenge_method and code_challenge',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"type":"signup","email":"both@example.com","phone":"15550000009"}',
    status: 400,
    code: 'validation_failed',
    message: 'Only an email address or phone number should be provided.',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"type":"email","email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Verify requires either a token or a token hash',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"type":"email","token":"123456","token_hash":"abc","email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Verify requires either a token or a token hash',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"type":"email","token_hash":"abc","email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Only the token_hash and type should be provided',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"type":"sms","token":"123456","email":"a@example.com","phone":"15550000001"}',
    status: 400,
    code: 'validation_failed',
    message: 'Only an email address or phone number should be provided on verify',
  },
  {
    method: 'POST',
    url: '/verify',
    body: '{"type":"sms","token":"123456"}',
    status: 400,
    code: 'validation_failed',
    message: 'Only an email address or phone number should be provided on verify',
  },
  {
    method: 'POST',
    url: '/otp',
    body: '{}',
    status: 400,
    code: 'validation_failed',
    message: 'One of email or phone must be set',
  },
  {
    method: 'POST',
    url: '/otp',
    body: '{"email":null,"create_user":true}',
    status: 400,
    code: 'validation_failed',
    message: 'One of email or phone must be set',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"type":"sms"}',
    status: 400,
    code: 'validation_failed',
    message: 'Type provided requires a phone number',
  },
  {
    method: 'POST',
    url: '/resend',
    body: '{"type":"sms","email":"a@example.com"}',
    status: 400,
    code: 'validation_failed',
    message: 'Type provided requires a phone number',
  },
]

/** Bearer routes: the e2e suite sends these with a user token. */
export const BEARER_ANSWER_CASES: AnswerCase[] = [
  {
    method: 'PUT',
    url: '/user',
    body: '{"email":"x@"}',
    status: 400,
    code: 'validation_failed',
    message: 'Unable to validate email address: invalid format',
  },
  {
    method: 'POST',
    url: '/factors',
    body: '{"friendly_name":"f"}',
    status: 400,
    code: 'validation_failed',
    message: 'factor_type needs to be totp, phone, or webauthn',
  },
  {
    method: 'POST',
    url: '/factors',
    body: '{"factor_type":"sms"}',
    status: 400,
    code: 'validation_failed',
    message: 'factor_type needs to be totp, phone, or webauthn',
  },
]

/** A request to the OAuth token endpoint that authgate refuses in RFC 6749 §5.2's shape, as Supabase Auth would. */
export interface OAuthAnswerCase {
  /** The body, as `application/x-www-form-urlencoded` or JSON. */
  body: string
  json: boolean
  error: string
  description: string
}

/**
 * The token endpoint's grant rules (src/auth/backend-answers.ts). Supabase Auth checks the client
 * first, so the end-to-end suite sends these with a registered client's credentials.
 */
export const OAUTH_ANSWER_CASES: OAuthAnswerCase[] = [
  { body: 'code=abc', json: false, error: 'invalid_request', description: 'grant_type is required' },
  { body: 'grant_type=&code=abc', json: false, error: 'invalid_request', description: 'grant_type is required' },
  {
    body: 'grant_type=password&username=a&password=b',
    json: false,
    error: 'unsupported_grant_type',
    description: 'Client is not allowed to use grant type: password',
  },
  { body: '{"code":"abc"}', json: true, error: 'invalid_request', description: 'grant_type is required' },
  { body: '{"grant_type":null}', json: true, error: 'invalid_request', description: 'grant_type is required' },
  { body: '{"grant_type":7}', json: true, error: 'invalid_request', description: 'Invalid JSON body' },
  {
    body: '{"grant_type":"authorization_code","code":7}',
    json: true,
    error: 'invalid_request',
    description: 'Invalid JSON body',
  },
  { body: '[]', json: true, error: 'invalid_request', description: 'Invalid JSON body' },
  { body: 'null', json: true, error: 'invalid_request', description: 'grant_type is required' },
  {
    body: '{"grant_type":"client_credentials"}',
    json: true,
    error: 'unsupported_grant_type',
    description: 'Client is not allowed to use grant type: client_credentials',
  },
]
