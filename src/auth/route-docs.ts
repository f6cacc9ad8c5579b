import { ERRORS, ErrorSchema } from '../errors.ts'
import { answersOf } from './backend-answers.ts'
import { describeRequirements } from './query-requirements.ts'
import type { KnownErrorCode } from './error-codes.ts'
import { routeName, type AuthRoute } from './routes/index.ts'
import { NO_PROTOTYPE_KEYS } from './types/common.ts'
import { isRecord } from '../core/is-record.ts'
import { COOKIE_MODE_NOTE, COOKIE_MODE_REDIRECT_NOTE, withCookieAnswer } from './session-docs.ts'

/**
 * The documentation side of a mounted route: the Fastify `schema` the registry hands to the
 * document builder. Validation reads only `body` from it (see the auth context's validator).
 *
 * Every status an operation can answer is listed: its success statuses, Supabase Auth's own error
 * answers from the route table (`errors`), the bearer-token failures of routes that need a user's
 * token, and the gateway's own statuses. Each error status names its error codes, in the response
 * description, in a table in the operation description and as `x-error-codes`.
 */

// The OpenAPI-style `content` form keeps each shared schema intact (one named component) while every
// response has its own description.
const json = (schema: unknown) => ({ content: { 'application/json': { schema } } })

/** The OAuth 2.0 error shape (RFC 6749 §5.2) some token answers of Supabase Auth use. */
export const OAuthErrorSchema = {
  $id: 'OAuthErrorResponse',
  title: 'OAuthErrorResponse',
  description: 'OAuth-style error (RFC 6749 §5.2): status 400, or 401 for `invalid_client` with HTTP Basic credentials',
  type: 'object',
  properties: {
    error: { type: 'string', description: 'OAuth error code', examples: ['invalid_grant'] },
    error_description: {
      type: 'string',
      description: 'Human-readable explanation',
      examples: ['Invalid authorization code'],
    },
  },
  required: ['error'],
  additionalProperties: true,
} as const

const RATE_LIMIT_HEADERS = {
  'Retry-After': {
    description: "Seconds until a request may succeed (authgate's limit only)",
    schema: { type: 'integer', minimum: 0 },
  },
  RateLimit: {
    description: "Remaining quota (IETF httpapi ratelimit-headers draft 11; authgate's limit only)",
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description: "Quota policy (IETF httpapi ratelimit-headers draft 11; authgate's limit only)",
    schema: { type: 'string' },
  },
}

/** Supabase Auth's answers to a missing, bad or revoked user token (any `bearer` route). */
const BEARER_ERRORS: Record<number, readonly KnownErrorCode[]> = {
  400: ['bad_jwt'],
  401: ['no_authorization'],
  403: ['bad_jwt', 'session_not_found', 'user_not_found', 'user_banned'],
}

/** Who gives each code for one status. */
interface StatusCodes {
  backend: Set<KnownErrorCode>
  gateway: Set<KnownErrorCode>
}

/** The error codes of every error status of a route, Supabase Auth's and authgate's. */
export function errorCodes(route: AuthRoute, limited: boolean, cookieSessions = false): Map<number, StatusCodes> {
  const out = new Map<number, StatusCodes>()
  const at = (status: number) => {
    let entry = out.get(status)
    if (!entry) out.set(status, (entry = { backend: new Set(), gateway: new Set() }))
    return entry
  }
  const backend = (status: number, codes: readonly KnownErrorCode[]) => {
    for (const c of codes) at(status).backend.add(c)
  }
  const gateway = (code: keyof typeof ERRORS, status: number = ERRORS[code].status) => at(status).gateway.add(code)

  // Supabase Auth checks what it reads; a relayed route's 400 is the backend's alone.
  if (route.kind === 'typed' && route.body) backend(400, ['validation_failed', 'bad_json'])
  for (const [status, codes] of Object.entries(route.errors)) backend(Number(status), codes ?? [])
  if (route.bearer) for (const [status, codes] of Object.entries(BEARER_ERRORS)) backend(Number(status), codes)
  backend(500, ['unexpected_failure'])
  backend(504, ['request_timeout'])

  if (route.body && route.kind === 'typed') {
    gateway('validation_failed')
    gateway('bad_json')
    gateway('request_entity_too_large')
    gateway('unsupported_media_type')
  }
  if (route.params) gateway('validation_failed')
  if (route.queryChecked) gateway('validation_failed')
  // Statuses other than 400 that the gateway gives in Supabase Auth's words (weak_password's 422, ...).
  for (const answer of answersOf(routeName(route))) at(answer.status).gateway.add(answer.code)
  for (const r of route.requiredByQuery ?? []) at(r.answer.status).gateway.add(r.answer.code)
  if (limited) gateway('over_request_rate_limit')
  // The e-mail and SMS budgets answer in Supabase Auth's own codes (docs/rate-limiting.md).
  if (limited && route.sendsMessages === true) {
    gateway('over_email_send_rate_limit')
    gateway('over_sms_send_rate_limit')
  }
  // Cookie sessions: a cross-site use of the cookie, a store that cannot answer (src/sessions/).
  if (cookieSessions && (route.bearer || route.session !== undefined)) {
    gateway('cross_site_request')
    gateway('session_store_unavailable')
    if (route.cookieGuard === 'consent' || route.cookieGuard === 'pkce') gateway('session_cookie_refused')
  }
  // An answer authgate reads itself and cannot decode is refused (src/core/held-answer.ts).
  if (route.mend !== undefined || (cookieSessions && route.session !== undefined)) gateway('backend_unreadable')
  gateway('unexpected_failure')
  gateway('backend_unreachable')
  gateway('request_timeout')
  return new Map([...out.entries()].sort(([a], [b]) => a - b))
}

const list = (codes: Iterable<string>) => [...codes].map((c) => `\`${c}\``).join(', ')

function statusDescription(status: number, codes: StatusCodes, route: AuthRoute, limited: boolean): string {
  const from: string[] = []
  if (status === 429 && limited) {
    const budgets =
      route.sendsMessages === true
        ? '; its e-mail and SMS budgets: `over_email_send_rate_limit`, `over_sms_send_rate_limit`'
        : ''
    const own = `authgate's own limits (per client or account: \`over_request_rate_limit\`${budgets}; with \`Retry-After\` and \`RateLimit\` headers; Supabase Auth was not contacted)`
    return codes.backend.size > 0
      ? `Too many requests: ${own}, or Supabase Auth's limiter (${list(codes.backend)}; no \`Retry-After\`)`
      : `Too many requests: ${own}`
  }
  switch (status) {
    case 502:
      return codes.gateway.has('backend_unreadable')
        ? 'Supabase Auth could not be reached (`backend_unreachable`), or its answer could not be read (`backend_unreadable`)'
        : 'Supabase Auth could not be reached (`backend_unreachable`)'
    case 504:
      return 'Supabase Auth did not answer in time (`request_timeout`, from authgate or from Supabase Auth)'
    case 500:
      return 'Unexpected failure (`unexpected_failure`, from authgate or from Supabase Auth)'
    case 413:
      return 'Body larger than the limit (`request_entity_too_large`)'
    case 415:
      return route.form
        ? 'Body is neither JSON nor form-encoded (`unsupported_media_type`)'
        : 'Body is not JSON (`unsupported_media_type`)'
  }
  if (codes.backend.size > 0) from.push(`Supabase Auth: ${list(codes.backend)}`)
  if (codes.gateway.size > 0) from.push(`authgate, before forwarding: ${list(codes.gateway)}`)
  const lead: Record<number, string> = {
    400: 'Request refused',
    401: 'Not authenticated',
    403: 'Forbidden',
    404: 'Not found or feature turned off on Supabase Auth',
    409: 'Conflict',
    422: 'Refused by the rules of Supabase Auth',
    503: 'Unavailable',
    429: "Too many requests: Supabase Auth's limiter (no `Retry-After`)",
  }
  return `${lead[status] ?? 'Error'} (${from.join('; ')})`
}

function responseSchemas(
  route: AuthRoute,
  limited: boolean,
  codes: Map<number, StatusCodes>,
  cookieSessions: boolean,
): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [status, doc] of Object.entries(route.responses)) {
    const cookieAnswer = cookieSessions && route.session === 'issue' && status === '200'
    out[status] = {
      description: cookieAnswer ? `${doc.description} (without tokens in cookie session mode)` : doc.description,
      ...(doc.headers ? { headers: doc.headers } : {}),
      ...(cookieAnswer ? json(withCookieAnswer(doc.schema)) : doc.schema ? json(doc.schema) : {}),
    }
  }
  for (const [status, c] of codes) {
    const oauth = route.oauthErrors === true && (status === 400 || status === 401)
    out[String(status)] = {
      description: statusDescription(status, c, route, limited),
      ...(status === 429 && limited ? { headers: RATE_LIMIT_HEADERS } : {}),
      ...json(oauth ? { anyOf: [ErrorSchema, OAuthErrorSchema] } : ErrorSchema),
    }
  }
  return out
}

/** The operation description with the table of error statuses and codes appended. */
function describe(route: AuthRoute, codes: Map<number, StatusCodes>, cookieSessions: boolean): string {
  const rows = [...codes].map(([status, c]) => {
    const all = [...new Set([...c.backend, ...c.gateway])]
    return `| ${status} | ${list(all)} |`
  })
  const table = ['| Status | Error codes |', '| --- | --- |', ...rows].join('\n')
  const required = route.requiredByQuery ? describeRequirements(route.requiredByQuery) : ''
  const text = [route.description, required].filter(Boolean).join(' ')
  const redirects = !route.responses[200]
  const cookie =
    cookieSessions && route.session === 'issue'
      ? (redirects ? COOKIE_MODE_REDIRECT_NOTE : COOKIE_MODE_NOTE) + '\n\n'
      : cookieSessions && route.bearer
        ? 'With cookie sessions, the session cookie stands for the bearer token (unsafe methods only from an allowed origin).\n\n'
        : ''
  return `${text ? text + '\n\n' : ''}${cookie}**Error answers**\n\n${table}`
}

/** Example objects: the query an example needs travels as `x-query` (Example Objects have no place for it). */
function requestExamples(route: AuthRoute): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(route.examples ?? {}).map(([name, e]) => [
      name,
      {
        summary: e.summary,
        ...(e.description ? { description: e.description } : {}),
        value: e.value,
        ...(e.query ? { 'x-query': e.query } : {}),
      },
    ]),
  )
}

/** The prototype-key rule on an object below the body's root (the root's carries the description). */
const NESTED_NO_PROTOTYPE_KEYS = { not: { const: '__proto__' } } as const

const takesObjects = (schema: Record<string, unknown>) =>
  schema.type === 'object' || (Array.isArray(schema.type) && schema.type.includes('object'))

/**
 * The body schema with the JSON reader's prototype-key rule (src/auth/body.ts refuses `__proto__`
 * at any depth) stated on every object it describes: the root, declared nested objects (the
 * captcha object, WebAuthn credentials) and free-form ones (user metadata). Values the schema
 * leaves open are covered by the root's description.
 */
export function withPrototypeRule(schema: unknown, root = false): unknown {
  if (!isRecord(schema)) return schema
  const out: Record<string, unknown> = { ...schema }
  if (root) out.propertyNames = NO_PROTOTYPE_KEYS
  else if (takesObjects(schema)) out.propertyNames = NESTED_NO_PROTOTYPE_KEYS
  for (const key of ['properties', 'patternProperties'] as const) {
    const map = schema[key]
    if (isRecord(map))
      out[key] = Object.fromEntries(Object.entries(map).map(([name, s]) => [name, withPrototypeRule(s)]))
  }
  for (const key of ['items', 'additionalProperties'] as const)
    if (isRecord(schema[key])) out[key] = withPrototypeRule(schema[key])
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const list = schema[key]
    if (Array.isArray(list)) out[key] = list.map((s) => withPrototypeRule(s))
  }
  return out
}

/** The route's schema as documented: tags, summary, parameters, body, security and every status. */
export function routeSchema(route: AuthRoute, limited: boolean, cookieSessions = false): Record<string, unknown> {
  const codes = errorCodes(route, limited, cookieSessions)
  return {
    ...(route.body && route.kind === 'typed' ? { body: withPrototypeRule(route.body, true) } : {}),
    ...(route.query ? { querystring: route.query } : {}),
    ...(route.params ? { params: route.params } : {}),
    ...(route.form ? { consumes: ['application/json', 'application/x-www-form-urlencoded'] } : {}),
    ...(route.bodyOptional ? { bodyRequired: false } : {}),
    ...(route.examples ? { requestExamples: requestExamples(route) } : {}),
    tags: [route.tag],
    summary: route.summary,
    ...(route.deprecated ? { deprecated: true } : {}),
    description: describe(route, codes, cookieSessions),
    security: route.bearer ? [{ bearerAuth: [] }] : [],
    response: responseSchemas(route, limited, codes, cookieSessions),
    'x-error-codes': Object.fromEntries(
      [...codes].map(([s, c]) => [String(s), [...new Set([...c.backend, ...c.gateway])]]),
    ),
    // The same requirement as the description's, for tools: JSON Schema has no way to make body
    // fields depend on a query parameter.
    ...(route.requiredByQuery
      ? {
          'x-required-by-query': route.requiredByQuery.map(({ param, value, fields }) => ({ param, value, fields })),
        }
      : {}),
  }
}
