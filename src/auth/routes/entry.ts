import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TSchema } from 'typebox'
import type { BackendAnswer } from '../../errors.ts'
import type { AnswerMend } from '../../proxy/relay.ts'
import type { KnownErrorCode } from '../error-codes.ts'
import type { RouteGroup } from '../../core/route-groups.ts'

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
  /** Operators turn features off by group (src/core/route-groups.ts). */
  group: RouteGroup
  summary: string
  description?: string
  /** Still served by Supabase Auth, replaced by another route: `deprecated` in the document. */
  deprecated?: boolean
  /** Request body type. Absent: the backend reads no body and any body is forwarded untouched. */
  body?: TSchema
  /**
   * Top-level body fields that Supabase Auth's handler reads as absent when they are `""` (it tests
   * `!= ""`): the validator judges the body without them and the document says so
   * (src/auth/types/presence.ts).
   */
  emptyIsAbsent?: readonly string[]
  /**
   * Top-level body fields whose value Supabase Auth stores or looks up in its database, which cannot
   * hold a NUL character: a `\u0000` in one of their strings (or keys, at any depth) makes it answer
   * 500, so authgate refuses it with 400 (src/auth/body.ts) and the field's description says so.
   */
  nulRefused?: readonly string[]
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
   * Only codes of the one list (src/auth/error-codes.ts) type-check.
   */
  errors: Partial<Record<number, readonly KnownErrorCode[]>>
  /** Some error answers use the OAuth shape `{error, error_description}` (always 400). */
  oauthErrors?: boolean
  /** The backend requires a user's bearer token (documentation; the gateway itself authenticates nothing). */
  bearer: boolean
  /**
   * The answer may carry a Supabase session (`access_token` and `refresh_token`). In cookie
   * session mode (src/sessions/) its tokens are kept by authgate and replaced by a cookie;
   * `signOut` marks the route that ends a cookie session.
   */
  session?: 'issue' | 'signOut'
  /**
   * What a request authenticated by the session cookie must show besides the cookie, beyond the
   * cross-site check every POST, PUT, PATCH and DELETE gets (src/sessions/gate.ts). `sideEffect`: a
   * GET that changes something (sends a message, starts linking an identity), checked like an
   * unsafe method, since a top-level navigation from another site carries a `SameSite=Lax` cookie.
   * `consent`: an OAuth consent, whose code trades for tokens whoever holds the code can read:
   * refused unless AUTHGATE_SESSION_OAUTH_CONSENT allows it, and checked like `sideEffect`.
   * `pkce`: starts a flow that ends in a new session of the user (identity linking): with the
   * cookie only with PKCE (`code_challenge`) and in `on` mode, where the code trades for the cookie
   * at `POST /token?grant_type=pkce`; without PKCE the flow ends in a redirect carrying tokens, and
   * in `request` mode the exchange without the header answers tokens. Checked like `sideEffect` too.
   */
  cookieGuard?: 'sideEffect' | 'consent' | 'pkce'
  /** Limited by default (docs/decisions.md, D11); operators may change the set. */
  rateLimited: boolean
  /**
   * The body names an account (its e-mail or phone): the route has a per-account limit
   * (docs/rate-limiting.md) at the sign-in rate (AUTHGATE_ACCOUNT_RATE_LIMIT) or the message rate
   * (AUTHGATE_ACCOUNT_MESSAGE_RATE_LIMIT). Absent: no per-account limit can be set on it.
   */
  account?: 'sign-in' | 'message'
  /**
   * The route makes Supabase Auth send an e-mail or an SMS (which of the two: the body says) and
   * draws on the e-mail and SMS budgets (`POST /signup` only while sign-ups are not confirmed
   * automatically, src/ratelimit/autoconfirm.ts).
   */
  sendsMessages?: boolean
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
  /**
   * Fills a gap in Supabase Auth's answer that conforming clients refuse (docs/decisions.md, D28):
   * the answer is held whole and changed before it is relayed.
   */
  mend?: AnswerMend
  /**
   * Runs after validation, before the request is forwarded, and may answer it itself: the client
   * ID metadata documents' translation of a URL `client_id` (src/auth/client-metadata/).
   */
  prepare?: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>
  /**
   * Body fields that one query value makes required (non-empty strings), which a body schema cannot
   * say because it does not see the query: checked after the body's schema, refused in Supabase
   * Auth's words, and stated in the route's description.
   */
  requiredByQuery?: readonly QueryRequirement[]
  /**
   * The body fields Supabase Auth decodes, by a query value (`/token`: one struct per grant type):
   * a field of another JSON type fails its decoding only among these (src/auth/go-types.ts).
   */
  decodedByQuery?: { param: string; fields: Readonly<Record<string, readonly string[]>> }
}

/** With `?<param>=<value>` (its first value, as Supabase Auth reads it), `fields` must be non-empty strings. */
export interface QueryRequirement {
  param: string
  value: string
  fields: readonly string[]
  answer: BackendAnswer
}

/** The fields every route of a group shares, given once in the group's file. */
export type GroupDefaults = Pick<AuthRoute, 'kind' | 'tag' | 'group' | 'bearer' | 'rateLimited'>

/** A route as its group's file writes it: the group's defaults may be left out, or overridden. */
export type RouteEntry = Omit<AuthRoute, keyof GroupDefaults> & Partial<GroupDefaults>

/** Refuses fields `AuthRoute` does not have (a generic parameter alone would let them through). */
type NoExtraFields<E> = E & { [K in Exclude<keyof E, keyof RouteEntry>]: never }

/** A mounted route that keeps its literal method and path, from which the route ids are derived. */
export type TableRoute<E> = E extends { method: infer M; path: infer P } ? AuthRoute & { method: M; path: P } : never

/** The `METHOD /template` names of a list of table routes. */
export type RouteIdOf<R> = R extends { method: infer M extends string; path: infer P extends string }
  ? `${M} ${P}`
  : never

/** One group's routes, in the order given, each with the group's defaults under its own fields. */
export function withDefaults<const T extends readonly RouteEntry[]>(
  defaults: GroupDefaults,
  entries: T & { readonly [K in keyof T]: NoExtraFields<T[K]> },
): readonly TableRoute<T[number]>[] {
  return entries.map((entry) => ({ ...defaults, ...entry })) as readonly AuthRoute[] as readonly TableRoute<T[number]>[]
}
