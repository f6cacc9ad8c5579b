import type {
  FastifySchema,
  HTTPMethods,
  RouteHandlerMethod,
  RouteOptions,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify'
import type { Static, TSchema } from 'typebox'
import { routeAuthHook } from '../protect/hook.ts'
import { normaliseAuth, type AuthOption } from '../protect/requirement.ts'
import { mergeObjectSchemas } from '../openapi/json-schema.ts'
import { applyFieldTags } from '../openapi/request-split.ts'
import type { JsonSchema, SecurityRequirement } from '../openapi/types.ts'
import { documentedAccess } from '../protect/access.ts'

/**
 * How an application declares its own typed routes beside the mounted auth routes: one object
 * that Fastify validates with, the protect plugin checks and the document builder documents (this
 * is the one place that joins them). The request can be given as
 * a single request type with fields tagged by location (`inPath`, `inQuery`, `inHeader`,
 * `inForm`, or the property option `{ in: 'query' }`), or as Fastify's separate schemas.
 *
 * ```ts
 * app.route(defineRoute({
 *   method: 'GET', url: '/items/:id', tags: ['Items'], summary: 'Get an item',
 *   request: Type.Object({ id: inPath(Type.String({ format: 'uuid' })), expand: inQuery(Type.Optional(Type.Boolean())) }),
 *   response: Item,
 *   responses: [{ status: 404, description: 'No such item', example: { code: 404, msg: 'not found' } }],
 *   handler: async (request) => findItem(request.params.id),
 * }))
 * ```
 */

/** A response documented by status, description and example (an "explicit response": it replaces the generated one for its status). */
export interface ExplicitResponse {
  status: number | string
  description?: string
  /** Documented as given; without `schema`, the schema is derived from it. */
  example?: unknown
  schema?: TSchema | JsonSchema
  /** Response headers: `{ Name: { description, schema } }` or `{ Name: jsonSchema }`. */
  headers?: Record<string, JsonSchema>
}

type Props<T> = T extends { properties: infer P } ? P : Record<never, never>
type KeysIn<P, L> = { [K in keyof P]: P[K] extends { in: L } ? K : never }[keyof P]
type BodyKeys<P> = { [K in keyof P]: P[K] extends { in: 'path' | 'query' | 'header' | 'form' } ? never : K }[keyof P]
type PartOf<T, K> = [K] extends [never]
  ? unknown
  : T extends TSchema
    ? Pick<Static<T>, Extract<K, keyof Static<T>>>
    : unknown
type StaticOr<T> = T extends TSchema ? Static<T> : unknown

/** What a handler may send for an explicit response: its schema's type, else its example's type. */
type ExplicitReply<E> = E extends { schema: infer S } ? StaticOr<S> : E extends { example: infer X } ? X : never

export interface RouteGenericOf<Req, P, Q, H, B, R, E = never> {
  Params: PartOf<Req, KeysIn<Props<Req>, 'path'>> & StaticOr<P>
  Querystring: PartOf<Req, KeysIn<Props<Req>, 'query'>> & StaticOr<Q>
  Headers: PartOf<Req, KeysIn<Props<Req>, 'header'>> & StaticOr<H>
  Body: PartOf<Req, BodyKeys<Props<Req>> | KeysIn<Props<Req>, 'form'>> & StaticOr<B>
  /** Unknown when the route declares no responses at all. */
  Reply: [R] extends [undefined] ? ([E] extends [never] ? unknown : ExplicitReply<E>) : StaticOr<R> | ExplicitReply<E>
}

type FastifyRouteOptions<G extends RouteGenericOf<unknown, unknown, unknown, unknown, unknown, unknown, unknown>> =
  RouteOptions<
    RawServerDefault,
    RawRequestDefaultExpression<RawServerDefault>,
    RawReplyDefaultExpression<RawServerDefault>,
    G
  >

export interface RouteDefinition<Req, P, Q, H, B, R, E extends ExplicitResponse = ExplicitResponse> {
  method: HTTPMethods | HTTPMethods[]
  url: string
  /** The single request type: an object whose fields carry `in` tags; untagged fields are the JSON body. */
  request?: Req
  params?: P
  querystring?: Q
  headers?: H
  body?: B
  /** The success response type, documented (and serialised by Fastify) as `status` (default 200). */
  response?: R
  status?: number
  responses?: readonly E[]
  tags?: string[]
  summary?: string
  description?: string
  operationId?: string
  deprecated?: boolean
  /** `[]` for a public operation, `[{ bearerAuth: [] }]`, or any scheme declared in the options. */
  security?: SecurityRequirement[]
  /**
   * The access token this route checks (needs the protect plugin): `'required'`, `'optional'`, or
   * `{ role, aal, scope, session }`. The token is verified before the body is read, `request.user`
   * carries its claims, and the document shows bearer security, 401 (also for a too-low AAL) and (for role or scope) 403.
   */
  auth?: AuthOption
  consumes?: string[]
  produces?: string[]
  /** Leave the route out of the document. */
  hide?: boolean
  handler: RouteHandlerMethod<
    RawServerDefault,
    RawRequestDefaultExpression<RawServerDefault>,
    RawReplyDefaultExpression<RawServerDefault>,
    RouteGenericOf<Req, P, Q, H, B, R, E>
  >
  /** Any other Fastify route option (preHandler, config, bodyLimit, ...). */
  options?: Omit<FastifyRouteOptions<RouteGenericOf<Req, P, Q, H, B, R, E>>, 'method' | 'url' | 'schema' | 'handler'>
}

export function defineRoute<
  Req extends TSchema | undefined = undefined,
  P extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  H extends TSchema | undefined = undefined,
  B extends TSchema | undefined = undefined,
  R extends TSchema | undefined = undefined,
  E extends ExplicitResponse = never,
>(def: RouteDefinition<Req, P, Q, H, B, R, E>): FastifyRouteOptions<RouteGenericOf<Req, P, Q, H, B, R, E>> {
  const methods = (Array.isArray(def.method) ? def.method : [def.method]).map((m) => m.toUpperCase())
  const schema: FastifySchema & JsonSchema = {}

  const { params, querystring, headers, body, consumes } = applyFieldTags(
    {
      params: def.params,
      querystring: def.querystring,
      headers: def.headers,
      body: mergeObjectSchemas(def.body, def.request),
      consumes: def.consumes,
    },
    def.url,
  )
  if (body && methods.some((m) => m === 'GET' || m === 'HEAD')) {
    throw new TypeError(`${def.url}: GET and HEAD requests have no body; tag the fields inQuery, inPath or inHeader`)
  }
  if (params) schema.params = params
  if (querystring) schema.querystring = querystring
  if (headers) schema.headers = headers
  if (body) schema.body = body

  const response: Record<string, unknown> = {}
  if (def.response !== undefined) response[String(def.status ?? 200)] = def.response
  for (const r of def.responses ?? []) {
    const entry: JsonSchema = { ...((r.schema as JsonSchema | undefined) ?? {}) }
    if (r.description !== undefined) entry.description = r.description
    // `examples` (not OpenAPI's `example`): Fastify's Ajv is strict and knows only JSON Schema keywords.
    if (r.example !== undefined) entry.examples = [r.example]
    if (r.headers) entry.headers = r.headers
    response[String(r.status)] = entry
  }
  if (Object.keys(response).length > 0) schema.response = response

  if (def.tags) schema.tags = def.tags
  if (def.summary !== undefined) schema.summary = def.summary
  if (def.description !== undefined) schema.description = def.description
  if (def.operationId !== undefined) schema.operationId = def.operationId
  if (def.deprecated) schema.deprecated = true
  if (def.security) schema.security = def.security
  if (consumes) schema.consumes = consumes
  if (def.produces) schema.produces = def.produces
  if (def.hide) schema.hide = true

  let extra: Record<string, unknown> = {}
  if (def.auth !== undefined) {
    const auth = normaliseAuth(def.auth)
    schema.access = documentedAccess(auth)
    const own = def.options?.onRequest
    const onRequest = [routeAuthHook(auth), ...(own === undefined ? [] : Array.isArray(own) ? own : [own])]
    extra = { onRequest, config: { ...(def.options?.config ?? {}), auth } }
  }

  return {
    ...(def.options ?? {}),
    ...extra,
    method: def.method,
    url: def.url,
    schema,
    handler: def.handler,
  } as FastifyRouteOptions<RouteGenericOf<Req, P, Q, H, B, R, E>>
}
