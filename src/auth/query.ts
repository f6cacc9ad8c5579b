import type { FastifyReply, FastifyRequest } from 'fastify'
import { sendError } from '../errors.ts'
import { bodyAjv } from '../validation.ts'
import type { AuthRoute } from './routes/index.ts'

/**
 * The query of a route whose `queryChecked` is set, judged before forwarding. Values are read as
 * Supabase Auth reads them (the first of a repeated name, `+` as a space), from the raw target the
 * backend will receive; the query string itself is still forwarded untouched. Only the values are
 * judged: a parameter left out reaches Supabase Auth, which answers it itself.
 */
export function queryHook(route: AuthRoute) {
  if (!route.query) throw new TypeError(`${route.method} ${route.path}: queryChecked needs a query schema`)
  // Values only: a missing parameter is Supabase Auth's to answer, in its own words (it does).
  const { required: _required, ...valueRules } = route.query as { required?: unknown }
  const validate = bodyAjv.compile(valueRules)
  return async function checkQuery(request: FastifyRequest, reply: FastifyReply) {
    const url = request.raw.url ?? ''
    const q = url.indexOf('?')
    const values: Record<string, string> = Object.create(null)
    if (q !== -1) for (const [k, v] of new URLSearchParams(url.slice(q + 1))) if (!(k in values)) values[k] = v
    if (validate(values)) return
    const first = validate.errors?.[0]
    const where = first?.instancePath ? `querystring${first.instancePath}` : 'querystring'
    return sendError(request, reply, 'validation_failed', `${where} ${first?.message ?? 'is invalid'}`)
  }
}
