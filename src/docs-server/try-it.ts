import { isRecord } from '../core/is-record.ts'
import type { OpenApiDocument } from '../openapi/types.ts'

/**
 * The reference page's "try it" for a person who has just started authgate: what the document
 * says first, and examples that work when sent as they are. Applied to the document the page
 * reads (both renderings), after the generic builder.
 */
export interface TryItOptions {
  /** The auth routes' mount prefix (`/auth`); undefined when authgate's plugin is not registered. */
  prefix: string | undefined
  /** The development account the sign-in examples are filled with. */
  exampleUser?: { email: string; password: string } | undefined
}

/** The address the auth routes' examples use for a user (src/auth/types/): replaced by the example user's. */
const EXAMPLE_EMAIL = 'user@example.com'

/** `info.description` when the application gives none: how to get a token and what the 401s mean. */
export function introduction(prefix: string | undefined, exampleUser?: { email: string; password: string }): string {
  const lines = ['## Introduction', '']
  if (prefix !== undefined) {
    const p = prefix
    lines.push(
      `Sign-up, sign-in and the user's own data are Supabase Auth's, served by authgate under \`${p || '/'}\`.`,
      'To call an operation that needs a signed-in user:',
      '',
      `1. Sign in: \`POST ${p}/token\` with \`grant_type=password\`, an e-mail and a password (an account comes from \`POST ${p}/signup\`)` +
        (exampleUser
          ? `; the examples are filled with this stack's test user, ${exampleUser.email} / ${exampleUser.password}.`
          : '.'),
      '2. Copy `access_token` from the answer.',
      "3. Give it as the bearer token in the operation's Authentication section; it is valid for an hour (`expires_in`), `refresh_token` gets the next one.",
      '',
    )
  }
  lines.push(
    "**Which operations need a token.** Operations tagged `Public` need none. Every other operation of the application is documented as needing a bearer token (security `bearerAuth`, a 401 answer) unless its route states its own security: that is the document's default rule, so an open route must carry the `Public` tag to be documented as open.",
  )
  return lines.join('\n')
}

/** The document with the introduction, the example user's sign-in examples and no optional redirect sent by default. */
export function forTryIt(doc: OpenApiDocument, options: TryItOptions): OpenApiDocument {
  const info = isRecord(doc.info) ? doc.info : {}
  if (typeof info.description !== 'string' || info.description === '')
    doc.info = { ...info, description: introduction(options.prefix, options.exampleUser) } as OpenApiDocument['info']
  const paths = isRecord(doc.paths) ? doc.paths : {}
  for (const [path, item] of Object.entries(paths)) {
    if (!isRecord(item)) continue
    for (const [method, operation] of Object.entries(item)) {
      if (!isRecord(operation)) continue
      if (options.prefix !== undefined && path.startsWith(`${options.prefix}/`)) {
        offerRedirectsUnticked(operation)
        // Not sign-up: its point is a new account, and the example user exists already.
        if (options.exampleUser && method === 'post' && path !== `${options.prefix}/signup`)
          fillExampleUser(operation, options.exampleUser)
      }
    }
  }
  return doc
}

/**
 * An optional `redirect_to` keeps its example, marked `x-disabled`: Scalar's client turns on every
 * optional parameter that has an example value, and a redirect the backend's allow list does not
 * hold is answered with the site URL instead, or refused. Ticking it sends the example.
 */
function offerRedirectsUnticked(operation: Record<string, unknown>): void {
  if (!Array.isArray(operation.parameters)) return
  for (const parameter of operation.parameters) {
    if (!isRecord(parameter) || parameter.name !== 'redirect_to' || parameter.required === true) continue
    const schema = isRecord(parameter.schema) ? parameter.schema : {}
    const value = parameter.example ?? schema.example
    if (value === undefined) continue
    delete parameter.example
    parameter.examples = { default: { summary: 'A redirect the allow list holds', value, 'x-disabled': true } }
  }
}

function fillExampleUser(operation: Record<string, unknown>, user: { email: string; password: string }): void {
  const body = isRecord(operation.requestBody) ? operation.requestBody : undefined
  const content = isRecord(body?.content) ? body.content : {}
  for (const media of Object.values(content)) {
    if (!isRecord(media)) continue
    if (isRecord(media.example)) fillValue(media.example, user)
    if (!isRecord(media.examples)) continue
    for (const example of Object.values(media.examples))
      if (isRecord(example) && isRecord(example.value)) fillValue(example.value, user)
  }
}

function fillValue(value: Record<string, unknown>, user: { email: string; password: string }): void {
  if (value.email !== EXAMPLE_EMAIL) return
  value.email = user.email
  if (typeof value.password === 'string') value.password = user.password
}
