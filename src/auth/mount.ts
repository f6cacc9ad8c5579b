import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify'
import { sendError } from '../errors.ts'
import type { Forwarder, ForwardTarget } from '../proxy/forwarder.ts'
import type { RateLimitHook } from '../ratelimit/limiter.ts'
import type { SessionGate } from '../sessions/gate.ts'
import { resolveTemplate, templateMatcher, templateParams } from '../proxy/path-guard.ts'
import { bodyReader } from './body.ts'
import { forwardedQuery } from './client-metadata/translate.ts'
import { decodedBasicCredentials } from './client-credentials.ts'
import { queryCheck, readQueryAsBackend } from './query.ts'
import { queryRequirementsCheck } from './query-requirements.ts'
import { routeSchema } from './route-docs.ts'
import { sessionRouteSchema } from './session-docs.ts'
import { routeKey } from '../core/route-key.ts'
import { readOnlyAsJsonBody } from '../validation.ts'
import type { AuthRoute, HttpMethod } from './routes/index.ts'

export interface MountOptions {
  /** The prefix `scope` was registered with; the path guard reads the raw request target. */
  prefix: string
  forwarder: Forwarder
  /** The routes to mount (the table minus the disabled groups). */
  routes: readonly AuthRoute[]
  /** Rate-limit hook per route (undefined: not limited). */
  rateLimitHook?: (route: AuthRoute) => RateLimitHook | undefined
  /**
   * Per-account limit and message budgets per route (undefined: none): keyed from the validated
   * body, so they run as a preHandler, after validation.
   */
  bodyLimitHook?: (route: AuthRoute) => RateLimitHook | undefined
  /** Cookie sessions (src/sessions/): the cookie's bearer on bearer routes, session answers into cookies. */
  sessions?: SessionGate
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The table entry a mounted route was registered from (read by the auth error handler). */
    authRoute?: AuthRoute
  }
}

// Methods whose request body is read and forwarded (Supabase Auth reads JSON bodies on DELETE too).
const FORWARDED_BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

// Responses are the backend's bytes: schemas here document, they never serialise.
const noSerializer = () => (data: unknown) => JSON.stringify(data)

/** `/factors/{factor_id}/verify` → `/factors/:factor_id/verify` */
const fastifyUrl = (template: string) => template.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1')

/**
 * The handler that sends a route's request on to the backend; with cookie sessions, through the
 * session gate first, which may answer itself (a cross-site request) or add to what is forwarded.
 */
function forwardHandler(route: AuthRoute, options: MountOptions) {
  const forward = plainForwardHandler(route, options)
  const gate = options.sessions
  if (gate === undefined || (!route.bearer && route.session === undefined)) return forward
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const added = await gate.forMountedRoute(request, reply, route)
    if ('answered' in added) return added.answered
    // An async handler must not settle before the answer is written (Fastify would send an empty
    // one): it settles when the relay is over, or with the reply a refusal returns.
    return new Promise<FastifyReply | undefined>((resolve) => {
      const answered = forward(request, reply, added, () => resolve(undefined))
      if (answered !== undefined) resolve(answered)
    })
  }
}

/** What the session gate adds to a forwarded request. */
type Additions = Pick<ForwardTarget, 'headers' | 'rewrite' | 'rewriteCacheable'>

/**
 * The additions with the route's own mend of its answer run first (docs/decisions.md, D28). A
 * mend alone on a cacheable route is the same for every client: its answer may be cached.
 */
function withMend(route: AuthRoute, added: Additions | undefined, request: FastifyRequest): Additions | undefined {
  const mend = route.mend
  if (mend === undefined) return added
  const then = added?.rewrite
  return {
    ...added,
    rewrite: async (answer) => {
      const mended = await mend(answer, request)
      return then ? then(mended) : mended
    },
    ...(then === undefined && route.cacheable === true ? { rewriteCacheable: true } : {}),
  }
}

function plainForwardHandler(route: AuthRoute, options: MountOptions) {
  const { forwarder, prefix } = options
  const method = route.backend?.method ?? route.method
  const template = route.backend?.path ?? route.path
  const sendsBody = FORWARDED_BODY_METHODS.has(method)
  if (templateParams(route.path).length === 0) {
    // Synchronous, returning nothing: the relay answers, and Fastify waits for no promise.
    return (request: FastifyRequest, reply: FastifyReply, added?: Additions, onDone?: () => void): void => {
      // OAuth client credentials in HTTP Basic, decoded as RFC 6749 §2.3.1 says (docs/decisions.md, D27).
      const basic = route.form ? decodedBasicCredentials(request.headers.authorization) : undefined
      const target: ForwardTarget = {
        method,
        path: template,
        body: sendsBody ? request.rawBody : undefined,
        query: forwardedQuery(request),
        cacheable: route.cacheable === true,
      }
      if (basic) target.headers = { authorization: basic }
      // The session's additions replace the Basic credentials' header, as the route's own.
      const extra = withMend(route, added, request)
      if (extra !== undefined) Object.assign(target, extra)
      forwarder.forward(request, reply, target, onDone)
    }
  }
  // Parameters become part of the backend path: they are checked on the raw request target and
  // re-encoded, and the backend path is built from the template, never from the URL.
  const match = templateMatcher(route.path)
  const statics = staticPaths(options.routes, route)
  return (request: FastifyRequest, reply: FastifyReply, added?: Additions, onDone?: () => void) => {
    // A concrete path wins over a template (as OpenAPI matches paths): `DELETE
    // /user/identities/authorize` is a wrong method on the static path, not an identity id.
    const allow = statics.size > 0 ? staticAllow(statics, prefix, request.raw.url ?? '') : undefined
    // A refusal answers here and returns the reply; `onDone` is only for a forwarded request.
    if (allow) return methodNotAllowed(request, reply, allow)
    const resolved = resolveTemplate(request.raw.url ?? '', prefix, route.path, match)
    if (!resolved?.ok)
      return sendError(request, reply, 'validation_failed', resolved?.message ?? `Invalid path for ${route.path}`)
    forwarder.forward(
      request,
      reply,
      {
        method,
        path: resolved.path,
        body: sendsBody ? request.rawBody : undefined,
        ...withMend(route, added, request),
      },
      onDone,
    )
  }
}

/** Static (parameter-free) paths of `routes` that the template of `route` would also match, with their methods. */
function staticPaths(routes: readonly AuthRoute[], route: AuthRoute): Map<string, string[]> {
  const match = templateMatcher(route.path)
  const out = new Map<string, string[]>()
  for (const r of routes) {
    if (r.path.includes('{') || match(r.path) === undefined) continue
    const methods = out.get(r.path) ?? []
    if (!methods.includes(r.method)) out.set(r.path, [...methods, r.method])
  }
  return out
}

/** The methods of the static path a request target names, if it names one. */
function staticAllow(statics: Map<string, string[]>, prefix: string, target: string): string[] | undefined {
  const q = target.indexOf('?')
  const path = (q === -1 ? target : target.slice(0, q)).slice(prefix.length)
  return statics.get(path)
}

/** 405 with `Allow`, in the gateway's error shape (docs/decisions.md, D20). */
function methodNotAllowed(request: FastifyRequest, reply: FastifyReply, allow: readonly string[]) {
  const target = request.raw.url ?? ''
  return sendError(
    request,
    reply,
    'method_not_allowed',
    `${request.method} is not allowed on ${target.split('?')[0]}; allowed: ${allow.join(', ')}`,
    { allow: allow.join(', ') },
  )
}

/** The methods mounted at the path of a request target, in table order (none: an unknown path). */
export function allowedMethods(routes: readonly AuthRoute[], prefix: string, target: string): string[] {
  const out: string[] = []
  // A static path is only its own routes' (a template that would also match it does not count).
  const q = target.indexOf('?')
  const path = q === -1 ? target : target.slice(0, q)
  for (const route of routes) {
    if (!route.path.includes('{') && prefix + route.path === path && !out.includes(route.method)) out.push(route.method)
  }
  if (out.length > 0) return out
  for (const route of routes) {
    if (out.includes(route.method)) continue
    if (resolveTemplate(target, prefix, route.path)?.ok === true) out.push(route.method)
  }
  return out
}

/**
 * What answers a request the router has no route for: 405 with `Allow` on a path that is mounted
 * with other methods (as Supabase Auth answers on its own paths), the gateway's 404 otherwise.
 */
export function unrouted(routes: readonly AuthRoute[], prefix: string) {
  return (request: FastifyRequest, reply: FastifyReply) => {
    const target = request.raw.url ?? ''
    const allow = allowedMethods(routes, prefix, target)
    if (allow.length > 0) return methodNotAllowed(request, reply, allow)
    return sendError(request, reply, 'not_found', `No route for ${request.method} ${target.split('?')[0]}`)
  }
}

/**
 * Requests under a parameterised route that the router could not give to it (`/passkeys/`,
 * `/factors/a/b/verify`, a parameter longer than the router takes): 400 naming the parameter
 * when the target has the shape of one of the routes, the gateway's 404 otherwise. Never forwarded.
 */
function guardHandler(routes: AuthRoute[], prefix: string, all: readonly AuthRoute[]) {
  const matchers = routes.map((r) => [r, templateMatcher(r.path)] as const)
  const otherwise = unrouted(all, prefix)
  return (request: FastifyRequest, reply: FastifyReply) => {
    const target = request.raw.url ?? ''
    // A path mounted for other methods (`PATCH /passkeys/registration/options`, `DELETE
    // /factors/{id}/verify`): 405, not a malformed parameter of this method's route.
    const allow = allowedMethods(all, prefix, target)
    if (allow.length > 0 && !allow.includes(request.method)) return methodNotAllowed(request, reply, allow)
    for (const [route, match] of matchers) {
      const resolved = resolveTemplate(target, prefix, route.path, match)
      if (resolved === undefined) continue
      const message = resolved.ok
        ? `Invalid ${templateParams(route.path).join(', ')}: longer than the router accepts`
        : resolved.message
      return sendError(request, reply, 'validation_failed', message)
    }
    return otherwise(request, reply)
  }
}

/**
 * A step of a mounted route's own work on a request, run in a hook or in the handler: true when it
 * answered (a refusal), and nothing after it must run.
 */
type Step = (request: FastifyRequest, reply: FastifyReply) => boolean

/**
 * What a mounted route reads first: the query as Supabase Auth reads it, then its checked values
 * (`queryChecked`), then the body (src/auth/body.ts), in that order.
 */
function readRequest(route: AuthRoute): Step {
  const checkQuery = route.queryChecked ? queryCheck(route) : undefined
  const readBody = bodyReader(route)
  return (request, reply) => {
    readQueryAsBackend(request)
    if (checkQuery !== undefined && checkQuery(request, reply)) return true
    return readBody(request, reply) !== undefined
  }
}

/** Steps as one callback-style hook: no promise and microtask; a refusal answers and does not call `done`. */
function stepsHook(steps: readonly Step[]) {
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    for (const step of steps) if (step(request, reply)) return
    done()
  }
}

/** The handler, after the steps; a refusal returns nothing (the reply is sent already). */
function afterSteps(steps: readonly Step[], handler: ReturnType<typeof forwardHandler>) {
  if (steps.length === 0) return handler
  return (request: FastifyRequest, reply: FastifyReply) => {
    for (const step of steps) if (step(request, reply)) return undefined
    return handler(request, reply)
  }
}

/**
 * Registers the routes on `scope`, the encapsulated auth context: its body reader, validator and
 * error handler are set by the plugin (src/plugin.ts).
 *
 * Fastify makes a runner (three closures and their context, about 0.25 KB) for each request and
 * each hook phase a route has, so a route's own work runs in as few phases as keep its order
 * (docs/decisions.md, D170): the request is read in `preValidation` only where a body schema is
 * judged after it, the synchronous checks after validation run in the handler, and a `preHandler`
 * phase is kept only for the hooks that wait (the per-account limit, a route's `prepare`). The
 * order is the same: reading, validation, the query's requirements, the per-account limit,
 * `prepare`, the handler.
 */
export function mountAuthRoutes(scope: FastifyInstance, options: MountOptions): void {
  // Catch-all guards, one per method and static base (`POST /factors/*` serves challenge and verify).
  const guards = new Map<string, { method: HttpMethod; url: string; routes: AuthRoute[] }>()
  for (const route of options.routes) {
    const limiter = options.rateLimitHook?.(route)
    const bodyLimiter = options.bodyLimitHook?.(route)
    const schema = routeSchema(
      route,
      limiter !== undefined || bodyLimiter !== undefined,
      options.sessions !== undefined,
    )
    // Validation judges only a body (src/validation.ts): without a body schema nothing is judged
    // between reading the request and the handler, and the reading joins the steps after it.
    const validated = (schema as { body?: unknown }).body !== undefined
    // A route that takes no forms reads its body only as JSON, whose reader refuses the keys the
    // schema's prototype-key rule names: the validator leaves that rule out (src/validation.ts).
    if (validated && route.form !== true) readOnlyAsJsonBody((schema as { body: object }).body)
    const reading = readRequest(route)
    const steps: Step[] = [
      ...(validated ? [] : [reading]),
      // The query's requirements first: a body refused for them spends no account budget.
      ...(route.requiredByQuery ? [queryRequirementsCheck(route)] : []),
    ]
    const waiting = [...(bodyLimiter ? [bodyLimiter] : []), ...(route.prepare ? [route.prepare] : [])]
    const preHandler = waiting.length > 0 ? [...(steps.length > 0 ? [stepsHook(steps)] : []), ...waiting] : undefined
    scope.route({
      method: route.method,
      url: fastifyUrl(route.path),
      exposeHeadRoute: false,
      serializerCompiler: noSerializer,
      config: { authRoute: route },
      ...(limiter ? { onRequest: limiter } : {}),
      ...(validated ? { preValidation: stepsHook([reading]) } : {}),
      ...(preHandler !== undefined ? { preHandler } : {}),
      handler: afterSteps(preHandler === undefined ? steps : [], forwardHandler(route, options)),
      schema,
    } satisfies RouteOptions)

    const brace = route.path.indexOf('{')
    if (brace !== -1) {
      const url = `${route.path.slice(0, brace)}*`
      const key = routeKey(route.method, url)
      const guard = guards.get(key) ?? { method: route.method, url, routes: [] }
      guard.routes.push(route)
      guards.set(key, guard)
    }
  }
  for (const { method, url, routes } of guards.values()) {
    scope.route({
      method,
      url,
      exposeHeadRoute: false,
      serializerCompiler: noSerializer,
      schema: { hide: true },
      handler: guardHandler(routes, options.prefix, options.routes),
    })
  }
}

/**
 * RFC 8414 §3.1 path insertion: the metadata of issuer `https://host/auth` is looked for at
 * `https://host/.well-known/oauth-authorization-server/auth` (and OpenID clients that follow the
 * same rule try `/.well-known/openid-configuration/auth`). Registered on the application's root
 * context, outside the prefix; answered by the same backend route.
 */
export function mountRootAliases(app: FastifyInstance, options: MountOptions): void {
  if (options.prefix === '') return // the aliases would be the routes themselves
  for (const route of options.routes) {
    if (!route.rootAlias) continue
    const suffix = route.path.slice('/.well-known/'.length)
    const schema = routeSchema(route, false)
    // Every other method Fastify routes (OPTIONS, TRACE and QUERY too) gets the 405 the same path
    // under the prefix gives: outside the prefix, the application's not-found answer would be a 404.
    const others = app.supportedMethods.filter((m) => m !== route.method)
    app.route({
      method: others,
      url: `/.well-known/${suffix}${options.prefix}`,
      exposeHeadRoute: false,
      serializerCompiler: noSerializer,
      schema: { hide: true },
      handler: (request, reply) => methodNotAllowed(request, reply, [route.method]),
    })
    app.route({
      method: route.method,
      url: `/.well-known/${suffix}${options.prefix}`,
      exposeHeadRoute: false,
      serializerCompiler: noSerializer,
      config: { authRoute: route },
      handler: forwardHandler(route, options),
      schema: {
        ...schema,
        summary: `${route.summary} (path-inserted)`,
        description: `The same document as \`${options.prefix}${route.path}\`, at the location RFC 8414 §3.1 derives from an issuer with a path.`,
      },
    })
  }
}

/** `GET /session` in the auth routes' context (the page asks who is signed in). */
export function mountSessionRoute(scope: FastifyInstance, gate: SessionGate): void {
  scope.route({
    method: 'GET',
    url: '/session',
    exposeHeadRoute: false,
    schema: sessionRouteSchema(),
    handler: (request, reply) => gate.current(request, reply),
  })
}
