import type { ErrorObject } from 'ajv'
import { ERRORS, type BackendAnswer } from '../errors.ts'
import type { RouteId } from './routes/index.ts'

/**
 * Backend-shaped answers: where Supabase Auth itself rejects a condition that the gateway's
 * validation catches first, the gateway answers with Supabase Auth's status, error code, message
 * and extra fields, so that an application branching on `error.code` behaves the same with or
 * without the gateway. Each rule is checked against the real server by e2e/backend-answers.test.ts.
 * A failure no rule covers keeps the gateway's `validation_failed` (400).
 *
 * Keyed by route (`METHOD /template`), the failing JSON Schema keyword and the property concerned.
 */
export interface AnswerRule {
  route: RouteId
  keyword: string
  property: string
  /** Every answer the rule can give (the OpenAPI document lists their statuses). */
  answers: readonly BackendAnswer[]
  /** Which answer, given the parsed body (default: the only one); undefined keeps the generic answer. */
  pick?: (body: Record<string, unknown>) => BackendAnswer | undefined
}

const fixed = (answer: BackendAnswer) => ({ answers: [answer] })

// Supabase Auth's minimum password length cannot be configured below 6, so any shorter password
// is too short for every deployment (the schemas' `minLength: 6`; the words are ERRORS.weak_password).
// Longer minimums and character rules are the backend's to apply.
const signupNeedsPassword: BackendAnswer = {
  code: 'validation_failed',
  status: 400,
  message: 'Signup requires a valid password',
}
const weakPassword: BackendAnswer = {
  code: 'weak_password',
  status: 422,
  message: ERRORS.weak_password.message,
  fields: { weak_password: { reasons: ['length'] } },
  // Supabase Auth sends no x-sb-error-code with the 2024-01-01 weak-password body.
  codeHeaderInNewShape: false,
}
const emailFormat: BackendAnswer = {
  code: 'validation_failed',
  status: 400,
  message: 'Unable to validate email address: invalid format',
}
const verifyEmail: BackendAnswer = { code: 'validation_failed', status: 422, message: 'Invalid email format' }
const emailTooLong: BackendAnswer = { code: 'validation_failed', status: 400, message: 'An email address is too long' }

const pkceHalf: BackendAnswer = {
  code: 'validation_failed',
  status: 400,
  message: 'PKCE flow requires code_challenge_method and code_challenge',
}
/** A `code_challenge` without its method (src/auth/types/common.ts PKCE_PAIR). */
const pkceRules = (route: RouteId): AnswerRule[] =>
  (['required', 'type'] as const).map((keyword) => ({
    route,
    keyword,
    property: 'code_challenge_method',
    ...fixed(pkceHalf),
  }))
/** `email` and `phone` together, refused in each route's own words. */
const bothAddresses = (route: RouteId, message: string): AnswerRule => ({
  route,
  keyword: 'not',
  property: '',
  ...fixed({ code: 'validation_failed', status: 400, message }),
})
const verifyTokenOrHash: BackendAnswer = {
  code: 'validation_failed',
  status: 400,
  message: 'Verify requires either a token or a token hash',
}
const verifyHashAlone: BackendAnswer = {
  code: 'validation_failed',
  status: 400,
  message: 'Only the token_hash and type should be provided',
}
const verifyOneAddress: BackendAnswer = {
  code: 'validation_failed',
  status: 400,
  message: 'Only an email address or phone number should be provided on verify',
}

const grantTypeRequired: BackendAnswer = { code: 'invalid_request', status: 400, message: 'grant_type is required' }
const grantNotAllowed: BackendAnswer = {
  code: 'unsupported_grant_type',
  status: 400,
  message: 'Client is not allowed to use grant type: ',
}
const oauthBadJson: BackendAnswer = { code: 'invalid_request', status: 400, message: 'Invalid JSON body' }

/** The e-mail rules of every route that validates `email` with Supabase Auth's own check. */
const emailRules = (route: RouteId): AnswerRule[] => [
  { route, keyword: 'format', property: 'email', ...fixed(emailFormat) },
  { route, keyword: 'maxLength', property: 'email', ...fixed(emailTooLong) },
]

export const BACKEND_ANSWERS: readonly AnswerRule[] = [
  { route: 'POST /signup', keyword: 'required', property: 'password', ...fixed(signupNeedsPassword) },
  {
    route: 'POST /signup',
    keyword: 'minLength',
    property: 'password',
    answers: [signupNeedsPassword, weakPassword],
    pick: (body) => (body.password === '' ? signupNeedsPassword : weakPassword),
  },
  {
    route: 'POST /signup',
    keyword: 'maxLength',
    property: 'password',
    ...fixed({ code: 'validation_failed', status: 400, message: 'Password cannot be longer than 72 characters' }),
  },
  ...emailRules('POST /signup'),
  bothAddresses('POST /signup', 'Only an email address or phone number should be provided on signup.'),
  ...pkceRules('POST /signup'),
  bothAddresses('POST /otp', 'Only an email address or phone number should be provided'),
  // Neither address: Ajv reports the first branch of the `anyOf` first, then the `anyOf` itself.
  ...(
    [
      ['required', 'email'],
      ['anyOf', ''],
    ] as const
  ).map(([keyword, property]): AnswerRule => ({
    route: 'POST /otp',
    keyword,
    property,
    ...fixed({ code: 'validation_failed', status: 400, message: 'One of email or phone must be set' }),
  })),
  {
    route: 'POST /resend',
    keyword: 'required',
    property: 'phone',
    ...fixed({ code: 'validation_failed', status: 400, message: 'Type provided requires a phone number' }),
  },
  ...pkceRules('POST /otp'),
  ...pkceRules('POST /recover'),
  bothAddresses('POST /resend', 'Only an email address or phone number should be provided.'),
  ...pkceRules('POST /resend'),
  // Supabase Auth fails (500) on this one; the gateway answers as the other routes do.
  ...pkceRules('PUT /user'),
  { route: 'POST /verify', keyword: 'required', property: 'token', ...fixed(verifyTokenOrHash) },
  { route: 'POST /verify', keyword: 'required', property: 'email', ...fixed(verifyOneAddress) },
  {
    route: 'POST /verify',
    keyword: 'not',
    property: '',
    answers: [verifyTokenOrHash, verifyHashAlone, verifyOneAddress],
    pick: (body) =>
      body.token !== undefined && body.token_hash !== undefined
        ? verifyTokenOrHash
        : body.token_hash !== undefined
          ? verifyHashAlone
          : verifyOneAddress,
  },
  ...emailRules('POST /otp'),
  ...emailRules('POST /recover'),
  {
    route: 'POST /recover',
    keyword: 'required',
    property: 'email',
    ...fixed({ code: 'validation_failed', status: 400, message: 'Password recovery requires an email' }),
  },
  ...emailRules('POST /resend'),
  ...emailRules('POST /magiclink'),
  {
    route: 'POST /magiclink',
    keyword: 'required',
    property: 'email',
    // Supabase Auth's words on this route are those of /recover, with a 422.
    ...fixed({ code: 'validation_failed', status: 422, message: 'Password recovery requires an email' }),
  },
  ...pkceRules('POST /magiclink'),
  ...(['required', 'enum'] as const).map((keyword): AnswerRule => ({
    route: 'POST /resend',
    keyword,
    property: 'type',
    ...fixed({
      code: 'validation_failed',
      status: 400,
      message: 'Missing one of these types: signup, email_change, sms, phone_change',
    }),
  })),
  ...emailRules('PUT /user'),
  {
    route: 'POST /verify',
    keyword: 'required',
    property: 'type',
    ...fixed({ code: 'validation_failed', status: 400, message: 'Verify requires a verification type' }),
  },
  // The e-mail of a one-time code is checked with a 422 of its own; with a token hash, Supabase
  // Auth first refuses any e-mail at all (another message), so the generic answer stands there.
  ...(['format', 'maxLength'] as const).map((keyword): AnswerRule => ({
    route: 'POST /verify',
    keyword,
    property: 'email',
    answers: [verifyEmail],
    pick: (body) =>
      typeof body.token === 'string' && body.token !== '' && body.token_hash === undefined ? verifyEmail : undefined,
  })),
  ...(['required', 'enum'] as const).map((keyword): AnswerRule => ({
    route: 'POST /factors',
    keyword,
    property: 'factor_type',
    ...fixed({ code: 'validation_failed', status: 400, message: 'factor_type needs to be totp, phone, or webauthn' }),
  })),
  // The OAuth token endpoint answers in RFC 6749 §5.2's shape. A grant outside the two is refused
  // as no client may use it (Supabase Auth checks the client's grants first, and a client can only
  // be registered with these two).
  { route: 'POST /oauth/token', keyword: 'required', property: 'grant_type', ...fixed(grantTypeRequired) },
  {
    route: 'POST /oauth/token',
    keyword: 'enum',
    property: 'grant_type',
    answers: [grantTypeRequired, { ...grantNotAllowed, message: `${grantNotAllowed.message}…` }],
    pick: (body) =>
      body.grant_type === ''
        ? grantTypeRequired
        : { ...grantNotAllowed, message: grantNotAllowed.message + String(body.grant_type) },
  },
  {
    route: 'POST /oauth/token',
    keyword: 'type',
    property: 'grant_type',
    answers: [grantTypeRequired, oauthBadJson],
    // Go reads a JSON null as the empty string; any other type fails its decoding.
    pick: (body) => (body.grant_type === null ? grantTypeRequired : oauthBadJson),
  },
  ...(['required', 'enum'] as const).map((keyword): AnswerRule => ({
    route: 'POST /oauth/authorizations/{authorization_id}/consent',
    keyword,
    property: 'action',
    ...fixed({ code: 'validation_failed', status: 400, message: "action must be 'approve' or 'deny'" }),
  })),
]

const index = new Map<string, AnswerRule>(BACKEND_ANSWERS.map((r) => [`${r.route} ${r.keyword} ${r.property}`, r]))

/** The top-level property a validation error is about (`/password` → `password`). */
export function errorProperty(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>
  if (typeof params.missingProperty === 'string' && error.instancePath === '') return params.missingProperty
  return error.instancePath.split('/')[1] ?? ''
}

/** The backend-shaped answer for the first validation error of a route, if Supabase Auth has one. */
export function backendAnswer(route: RouteId, error: ErrorObject, body: unknown): BackendAnswer | undefined {
  const rule = index.get(`${route} ${error.keyword} ${errorProperty(error)}`)
  if (!rule) return undefined
  const record =
    body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {}
  return rule.pick ? rule.pick(record) : rule.answers[0]
}

/**
 * Supabase Auth's answer to a body it cannot decode into the route's struct (a field of another JSON
 * type, src/auth/go-types.ts), where it is not the generic 400 `bad_json`: the OAuth token endpoint
 * answers in RFC 6749's shape.
 */
export function decodingAnswer(route: RouteId): BackendAnswer | undefined {
  return route === 'POST /oauth/token' ? oauthBadJson : undefined
}

/** The answers a route can give in Supabase Auth's words, for its documentation. */
export function answersOf(route: RouteId): BackendAnswer[] {
  return BACKEND_ANSWERS.filter((r) => r.route === route).flatMap((r) => r.answers)
}
