import type { FastifyReply, FastifyRequest } from 'fastify'
import { sendError } from '../errors.ts'
import { bodyAjv } from '../validation.ts'
import { backendQuery } from '../core/go-values.ts'
import type { AuthRoute } from './routes/index.ts'

/**
 * The query of a route whose `queryChecked` is set, judged before forwarding. Values are read as
 * Supabase Auth reads them (`request.query`, set by `readQueryAsBackend`); the query string itself is
 * still forwarded untouched. Only the values are
 * judged: a parameter left out reaches Supabase Auth, which answers it itself. The check answers a
 * refusal itself and returns true (src/auth/mount.ts runs it).
 */
export function queryCheck(route: AuthRoute) {
  if (!route.query) throw new TypeError(`${route.method} ${route.path}: queryChecked needs a query schema`)
  // Values only: a missing parameter is Supabase Auth's to answer, in its own words (it does).
  const { required: _required, ...valueRules } = route.query as { required?: unknown }
  const validate = bodyAjv.compile(valueRules)
  return function checkQuery(request: FastifyRequest, reply: FastifyReply): boolean {
    if (validate(request.query)) return false
    const first = validate.errors?.[0]
    const where = first?.instancePath ? `querystring${first.instancePath}` : 'querystring'
    sendError(request, reply, 'validation_failed', `${where} ${first?.message ?? 'is invalid'}`)
    return true
  }
}

/**
 * What every mounted route does first: `request.query` becomes the query as Supabase Auth reads
 * it (src/core/go-values.ts), one string per name, so everything downstream (the query's checks,
 * the per-account limit's grant, the session gate's logout scope) reads the value the backend acts
 * on, never an array of a repeated name.
 */
export function readQueryAsBackend(request: FastifyRequest): void {
  request.query = backendQuery(request.raw.url ?? '')
}
