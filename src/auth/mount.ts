import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { ErrorSchema, sendError } from '../errors.ts'
import { mediaKind, parseForm, parseJson } from '../proxy/body.ts'
import type { Forwarder } from '../proxy/forwarder.ts'
import { checkIdSegment, rawSegmentAfter } from '../proxy/path-guard.ts'
import { authValidatorCompiler } from '../validation.ts'
import { AUTH_ROUTES, type AuthRoute, type ResponseDoc } from './routes.ts'

export interface MountOptions {
  prefix: string
  forwarder: Forwarder
  bodyLimit: number
  /** Rate-limit hook per route (undefined: not limited). */
  rateLimitHook?: (route: AuthRoute) => ((request: FastifyRequest, reply: FastifyReply) => Promise<unknown>) | undefined
  routes?: readonly AuthRoute[]
}

/** Route config every mounted route carries, for the registry and for hooks. */
export interface AuthRouteConfig {
  authgate: { template: string; kind: AuthRoute['kind']; tag: AuthRoute['tag']; rateLimited: boolean }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The exact body bytes as received (auth routes only). */
    rawBody?: Buffer | undefined
  }
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

// The OpenAPI-style `content` form keeps each shared schema intact (one named component) while every
// response has its own description.
const json = (schema: unknown) => ({ content: { 'application/json': { schema } } })
const errorResponse = (description: string, headers?: ResponseDoc['headers']) => ({ description, ...(headers ? { headers } : {}), ...json(ErrorSchema) })

const RATE_LIMIT_HEADERS = {
  'Retry-After': { description: 'Seconds until a request may succeed', schema: { type: 'integer', minimum: 0 } },
  RateLimit: { description: 'Remaining quota (IETF httpapi ratelimit-headers draft 11)', schema: { type: 'string' } },
  'RateLimit-Policy': { description: 'Quota policy (IETF httpapi ratelimit-headers draft 11)', schema: { type: 'string' } },
}

function responseSchemas(route: AuthRoute, limited: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [status, doc] of Object.entries(route.responses)) {
    out[status] = {
      description: doc.description,
      ...(doc.headers ? { headers: doc.headers } : {}),
      ...(doc.schema ? json(doc.schema) : {}),
    }
  }
  out['400'] = errorResponse(route.kind === 'relay' ? 'Rejected by Supabase Auth' : 'Request rejected by validation or by Supabase Auth')
  if (route.bearer) out['401'] = errorResponse('Missing or malformed bearer token')
  if (route.body) {
    out['413'] = errorResponse('Body larger than the limit')
    out['415'] = errorResponse(route.form ? 'Body is neither JSON nor form-encoded' : 'Body is not JSON')
  }
  if (limited) out['429'] = errorResponse('Rate limit reached; Supabase Auth was not contacted', RATE_LIMIT_HEADERS)
  out['500'] = errorResponse('Unexpected failure')
  out['502'] = errorResponse('Supabase Auth could not be reached')
  out['504'] = errorResponse('Supabase Auth did not answer in time')
  return out
}

/** Content-type check and parse for validation; the raw bytes stay on the request for forwarding. */
function bodyHook(route: AuthRoute) {
  const optional = route.bodyOptional === true
  return async function parseBody(request: FastifyRequest, reply: FastifyReply) {
    const raw = request.body as Buffer | undefined
    request.rawBody = raw
    if (!route.body) return
    if (raw === undefined || raw.length === 0) {
      if (optional) {
        request.body = {}
        return
      }
      return sendError(request, reply, 'bad_json', 'Request body is empty')
    }
    const kind = mediaKind(request.headers['content-type'])
    if (kind === 'json' || (kind === 'form' && route.form)) {
      const parsed = kind === 'json' ? parseJson(raw) : parseForm(raw)
      if (!parsed.ok) return sendError(request, reply, 'bad_json', parsed.message)
      request.body = parsed.value
      return
    }
    return sendError(
      request,
      reply,
      'unsupported_media_type',
      route.form ? 'Content-Type must be application/json or application/x-www-form-urlencoded' : 'Content-Type must be application/json',
    )
  }
}

/** Registers the table's routes on `app` (an encapsulated context: its content-type parser is the raw one). */
export function mountAuthRoutes(app: FastifyInstance, options: MountOptions): void {
  const { prefix, forwarder } = options

  // Every body is read once as bytes; parsing for validation happens per route in `bodyHook`.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: options.bodyLimit }, (_req, body, done) => done(null, body))

  for (const route of options.routes ?? AUTH_ROUTES) {
    const hasParam = route.path.includes('{id}')
    const backendMethod = route.backend?.method ?? route.method
    const sendsBody = BODY_METHODS.has(backendMethod)
    const limiter = options.rateLimitHook?.(route)
    const config: AuthRouteConfig = { authgate: { template: route.path, kind: route.kind, tag: route.tag, rateLimited: limiter !== undefined } }

    const idBase = hasParam ? prefix + route.path.slice(0, route.path.indexOf('/{id}')) : ''
    const forward = hasParam
      ? async (request: FastifyRequest, reply: FastifyReply) => {
          const segment = rawSegmentAfter(request.raw.url ?? '', idBase)
          const checked = segment === undefined ? { ok: false as const, reason: 'missing id' } : checkIdSegment(segment)
          if (!checked.ok) return sendError(request, reply, 'validation_failed', `Invalid passkey id: ${checked.reason}`)
          const path = (route.backend?.path ?? route.path).replace('{id}', checked.encoded)
          return forwarder.forward(request, reply, { method: backendMethod, path, body: sendsBody ? request.rawBody : undefined })
        }
      : async (request: FastifyRequest, reply: FastifyReply) =>
          forwarder.forward(request, reply, {
            method: backendMethod,
            path: route.backend?.path ?? route.path,
            body: sendsBody ? request.rawBody : undefined,
          })

    const base: Omit<RouteOptions, 'url'> = {
      method: route.method,
      exposeHeadRoute: false,
      bodyLimit: options.bodyLimit,
      config,
      validatorCompiler: authValidatorCompiler,
      // Responses are the backend's bytes; schemas here document, they never serialise.
      serializerCompiler: () => (data: unknown) => JSON.stringify(data),
      ...(limiter ? { onRequest: limiter } : {}),
      preValidation: bodyHook(route),
      handler: forward,
    }

    app.route({
      ...base,
      url: prefix + route.path.replace('{id}', ':id'),
      schema: {
        ...(route.body && route.kind === 'typed' ? { body: route.body } : {}),
        ...(route.query ? { querystring: route.query } : {}),
        ...(route.params ? { params: route.params } : {}),
        ...(route.form ? { consumes: ['application/json', 'application/x-www-form-urlencoded'] } : {}),
        tags: [route.tag],
        summary: route.summary,
        ...(route.description ? { description: route.description } : {}),
        security: route.bearer ? [{ bearerAuth: [] }] : [],
        response: responseSchemas(route, limiter !== undefined),
      } as Record<string, unknown>,
    })

    if (hasParam) {
      // `/passkeys/` and `/passkeys/a/b` must get 400 from the guard, not 404 (NOTES.md decision 3).
      app.route({
        ...base,
        url: prefix + route.path.slice(0, route.path.indexOf('{id}')) + '*',
        schema: { ...(route.body ? { body: route.body } : {}), hide: true } as Record<string, unknown>,
      })
    }
  }
}
