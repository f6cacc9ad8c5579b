import type { FastifyInstance, RouteOptions } from 'fastify'
import { ROUTE_ACCESS, type RouteAccess, type RouteEntry, type RouteSchema } from './types.ts'

const HOOKS = ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const

/** The access a route's own hooks document (`ROUTE_ACCESS`), if one of them does. */
function hookedAccess(route: RouteOptions): RouteAccess | undefined {
  for (const name of HOOKS) {
    const hooks = route[name] as unknown
    for (const hook of Array.isArray(hooks) ? hooks : [hooks]) {
      const access = (hook as { [ROUTE_ACCESS]?: RouteAccess } | undefined)?.[ROUTE_ACCESS]
      if (access !== undefined) return access
    }
  }
  return undefined
}

/**
 * Every route registered on an instance, as the document builder needs it. Fastify has no public
 * way to list routes with their options, so the registry listens with `onRoute`: it sees routes
 * registered on the instance after `createRegistry` and in plugins registered after it (hooks are
 * inherited by child contexts when they are created). Routes registered before it, or in an
 * encapsulated sibling context, are not seen; create it first. It only records: the routes are
 * registered, validated and served exactly as they would be without it.
 */
export interface RouteRegistry {
  /** A snapshot in registration order; hidden routes and Fastify's automatic HEAD routes excluded. */
  entries(): RouteEntry[]
  /** Records a route by hand (for routes the hook cannot see, e.g. registered before the registry). */
  add(entry: RouteEntry): void
  /** Changes whenever a route is recorded: what is built from the entries can be cached on it. */
  readonly version: number
}

const registries = new WeakMap<FastifyInstance, RouteRegistry>()

export function createRegistry(app: FastifyInstance): RouteRegistry {
  // Registering twice on one instance would record every route twice.
  const existing = registries.get(app)
  if (existing) return existing

  const list: RouteEntry[] = []
  let version = 0
  // GET routes that will get an automatic HEAD twin: Fastify registers the twin right after,
  // with a copy of the same options (same handler), and it fires onRoute like any route.
  const autoHeadOf = new Map<string, RouteOptions['handler']>()
  const exposeHeadByDefault = (app.initialConfig as { exposeHeadRoutes?: boolean }).exposeHeadRoutes ?? true

  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) => String(m).toUpperCase())
    const url = route.url ?? route.path
    if (methods.length === 1 && methods[0] === 'HEAD' && autoHeadOf.get(url) === route.handler) {
      autoHeadOf.delete(url)
      return
    }
    if (methods.includes('GET') && !methods.includes('HEAD') && (route.exposeHeadRoute ?? exposeHeadByDefault))
      autoHeadOf.set(url, route.handler)

    // Recorded as given, never changed: what Fastify validates must not depend on whether a
    // registry listens.
    const given = route.schema as RouteSchema | undefined
    if (given?.hide === true) return
    // A check installed by hand documents itself; the recorded schema is a copy, the route's own
    // stays as given.
    const access = given?.access === undefined ? hookedAccess(route) : undefined
    const schema = access === undefined ? given : { ...given, access }
    list.push({ methods, url, schema, config: route.config as Record<string, unknown> | undefined })
    version++
  })

  const registry: RouteRegistry = {
    entries: () => list.slice(),
    add: (entry) => {
      list.push(entry)
      version++
    },
    get version() {
      return version
    },
  }
  registries.set(app, registry)
  return registry
}
