import type { FastifyRequest } from 'fastify'

// Fastify's own key of a request's route context, found once on the first request read.
let contextKey: symbol | undefined | null = null

/**
 * The route template a request matched (`/token`, `/rest/v1/*`), or undefined when none did.
 * `request.routeOptions` is a getter that builds a new object of a dozen options, and asks the
 * router for its constraint strategies, on every read; the metrics read the template on every
 * request, twice for a forwarded one. The route's context, which Fastify keeps on the request,
 * holds the same `config.url` the getter reads: it is read there, and through `routeOptions` on a
 * Fastify that keeps it otherwise.
 */
export function routeUrl(request: FastifyRequest): string | undefined {
  if (contextKey === null)
    contextKey = Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context')
  const context =
    contextKey === undefined
      ? undefined
      : ((request as unknown as Record<symbol, { config?: { url?: unknown } } | undefined>)[contextKey] ?? undefined)
  const url = context?.config?.url
  return typeof url === 'string' ? url : request.routeOptions.url
}
