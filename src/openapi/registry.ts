import type { FastifyInstance, RouteOptions } from 'fastify'
import type { RouteEntry, RouteSchema } from './types.ts'

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
    const schema = route.schema as RouteSchema | undefined
    if (schema?.hide === true) return
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
