import type { FastifyRequest } from 'fastify'

/**
 * Request log lines without the query string: `/verify?token=…`, `/callback?code=…` and
 * `/authorize?code_challenge=…` carry secrets (LIBRARIES.md, pino).
 */
export function requestSerializer(req: FastifyRequest) {
  const url = req.url ?? ''
  const q = url.indexOf('?')
  return {
    method: req.method,
    url: q === -1 ? url : url.slice(0, q),
    remoteAddress: req.ip,
  }
}
